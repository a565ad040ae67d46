"""`python -m services.table`: read settings, build the app, run it."""

from services.common.host import main
from services.table.app import build_app

if __name__ == "__main__":
    main("table", build_app)
