"""`python -m services.matchmaking`: read settings, build the app, run it."""

from services.common.host import main
from services.matchmaking.app import build_app

if __name__ == "__main__":
    main("matchmaking", build_app)
