"""`python -m services.leaderboard` runs the service; `... rebuild` empties the boards and
applies the leaderboard's archive again (run it with the service's settings, then restart the
service)."""

import asyncio
import sys

from services.common.host import main
from services.leaderboard.app import build_app, rebuild_boards

if __name__ == "__main__":
    if sys.argv[1:] == ["rebuild"]:
        print(f"rebuilt the boards from {asyncio.run(rebuild_boards())} events")
    else:
        main("leaderboard", build_app)
