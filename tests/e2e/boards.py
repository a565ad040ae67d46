"""The leaderboard's boards against a rebuild from its own archive (the e2e fault tests' check:
nothing applied twice, nothing missed)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import redis.asyncio as redis_asyncio

from services.common.deps import sql_engine
from services.common.migrate import migrate
from services.leaderboard.app import MIGRATIONS
from services.leaderboard.consumer import EventHandler, rebuild
from services.leaderboard.store import SqlBoardStore


async def assert_boards_equal_a_rebuild(
    live_db: Path, scratch: Path, redis_url: str, player_ids: Iterable[str]
) -> None:
    """Rebuild the boards from `live_db`'s archive into a fresh database (Redis db 1) and
    compare every player's profile."""
    live_engine = sql_engine(f"sqlite+aiosqlite:///{live_db}")
    fresh_engine = sql_engine(f"sqlite+aiosqlite:///{scratch / 'rebuilt.db'}")
    fresh_redis = redis_asyncio.Redis.from_url(redis_url.rsplit("/", 1)[0] + "/1")
    try:
        await migrate(fresh_engine, MIGRATIONS)
        live = SqlBoardStore(live_engine, fresh_redis)
        fresh = SqlBoardStore(fresh_engine, fresh_redis)
        await rebuild(EventHandler(fresh), source=live)
        for player_id in player_ids:
            assert await live.profile(player_id) == await fresh.profile(player_id)
    finally:
        await fresh_redis.aclose()
        await live_engine.dispose()
        await fresh_engine.dispose()
