"""`python -m services.wallet`: read settings, build the app, run it."""

from services.common.host import main
from services.wallet.app import build_app

if __name__ == "__main__":
    main("wallet", build_app)
