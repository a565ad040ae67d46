"""`python -m services.bots`: read settings, build the app, run it."""

from services.bots.app import build_app
from services.common.host import main

if __name__ == "__main__":
    main("bots", build_app)
