"""The leaderboard's boards against a rebuild from its own archive (the e2e fault tests' check:
nothing applied twice, nothing missed)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path

import redis.asyncio as redis_asyncio

from services.common.connections import sql_engine
from services.common.migrate import migrate
from services.leaderboard.adapters.sql_boards import SqlBoardStore
from services.leaderboard.app import MIGRATIONS
from services.leaderboard.consumer import EventHandler, rebuild


async def assert_boards_equal_a_rebuild(
    live_db: Path | str,
    scratch: Path,
    redis_url: str,
    player_ids: Iterable[str],
    settle_s: float = 30,
) -> None:
    """Rebuild the boards from `live_db`'s archive (a SQLite file, or a database URL) into a
    fresh database (Redis db 1) and compare every player's profile. The live leaderboard
    archives an event, then applies it, and may still be reading (a wallet event published
    late): the two may differ for a moment, so the rebuild is made again until they agree, for
    at most `settle_s`. An event applied twice or missed never agrees."""
    live_engine = sql_engine(
        live_db if isinstance(live_db, str) else f"sqlite+aiosqlite:///{live_db}"
    )
    fresh_engine = sql_engine(f"sqlite+aiosqlite:///{scratch / 'rebuilt.db'}")
    fresh_redis = redis_asyncio.Redis.from_url(redis_url.rsplit("/", 1)[0] + "/1")
    players = list(player_ids)
    try:
        await migrate(fresh_engine, MIGRATIONS)
        live = SqlBoardStore(live_engine, fresh_redis)
        fresh = SqlBoardStore(fresh_engine, fresh_redis)
        deadline = time.monotonic() + settle_s
        while True:
            await rebuild(EventHandler(fresh), source=live)  # from empty boards each time
            apart = [
                (p, lived, rebuilt)
                for p in players
                if (lived := await live.profile(p)) != (rebuilt := await fresh.profile(p))
            ]
            if not apart or time.monotonic() > deadline:
                break
            await asyncio.sleep(1)
        assert apart == [], f"boards apart from a rebuild of their archive: {apart}"
    finally:
        await fresh_redis.aclose()
        await live_engine.dispose()
        await fresh_engine.dispose()
