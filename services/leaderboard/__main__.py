"""`python -m services.leaderboard`: read settings, build the app, run it."""

from services.common.host import main
from services.leaderboard.app import build_app

if __name__ == "__main__":
    main("leaderboard", build_app)
