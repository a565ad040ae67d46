"""`python -m services.leaderboard` runs the service; `... rebuild` empties the boards and
applies the leaderboard's archive again (run it with the service's settings, then restart the
service)."""

import asyncio
import sys

from services.common.host import main


def _rebuild() -> None:
    from services.common.deps import redis_client, sql_engine
    from services.common.migrate import migrate
    from services.leaderboard.app import MIGRATIONS
    from services.leaderboard.consumer import EventHandler, rebuild
    from services.leaderboard.settings import load_settings
    from services.leaderboard.store import SqlBoardStore

    async def run() -> None:
        settings = load_settings()
        engine = sql_engine(settings.database_url)
        redis = redis_client(settings.redis_url, cluster=settings.redis_cluster)
        await migrate(engine, MIGRATIONS)
        handler = EventHandler(SqlBoardStore(engine, redis), settings.season_ms)
        applied = await rebuild(handler)
        print(f"rebuilt the boards from {applied} events")
        await engine.dispose()
        await redis.aclose()

    asyncio.run(run())


if __name__ == "__main__":
    if sys.argv[1:] == ["rebuild"]:
        _rebuild()
    else:
        from services.leaderboard.app import build_app

        main("leaderboard", build_app)
