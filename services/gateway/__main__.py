"""`python -m services.gateway`: read settings, build the app, run it."""

from services.common.host import main
from services.gateway.app import build_app

if __name__ == "__main__":
    main("gateway", build_app)
