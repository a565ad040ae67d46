"""The outbox relays' row locks on PostgreSQL (services/wallet/outbox.py `_lock`). Every wallet
replica relays every row, so two may mark the same rows at once, each in its own order (the
publish path row by row, the confirm path the forgotten rows first, then the confirmed ones).
Seen in the soak: two such marks deadlocked. Locking the rows first, in id order, makes the
second mark wait for the first instead."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.connections import sql_engine
from services.common.migrate import migrate
from services.wallet.app import MIGRATIONS
from services.wallet.outbox import _lock
from services.wallet.schema import outbox
from tests.helpers import sql_url

pytestmark = pytest.mark.integration
ROWS = 12


@pytest.fixture(params=["postgres"])  # SQLite has one writer and no row locks
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    eng = sql_engine(await sql_url(request, tmp_path, "outbox_locks"))
    await migrate(eng, MIGRATIONS)
    async with eng.begin() as conn:
        rows = [
            {"topic": "wallet-events", "key": f"k{i}", "payload": b"x", "created_ms": i}
            for i in range(ROWS)
        ]
        await conn.execute(insert(outbox), rows)
    yield eng
    await eng.dispose()


async def _ids(engine: AsyncEngine) -> list[int]:
    async with engine.connect() as conn:
        return list((await conn.execute(select(outbox.c.id).order_by(outbox.c.id))).scalars())


async def _two_marks(engine: AsyncEngine, locked: bool) -> list[object]:
    """Two relays mark every row one by one in opposite orders, each (when `locked`) after
    locking them in id order. Each pauses after its first row until the other has started too,
    or for half a second when the other cannot start (it waits on the lock): without the lock
    the two interleave for certain. Returns each relay's outcome."""
    ids = await _ids(engine)
    started = [asyncio.Event(), asyncio.Event()]
    both = asyncio.Event()

    async def relay(order: list[int], mine: int) -> None:
        async with engine.begin() as conn:
            if locked:
                await _lock(conn, sorted(order))
            for n, row_id in enumerate(order):
                await conn.execute(
                    update(outbox).where(outbox.c.id == row_id).values(published_ms=1)
                )
                if n == 0:
                    started[mine].set()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(both.wait(), 0.5)

    async def release() -> None:
        await asyncio.gather(started[0].wait(), started[1].wait())
        both.set()

    releaser = asyncio.create_task(release())
    results = await asyncio.gather(
        relay(ids, 0), relay(list(reversed(ids)), 1), return_exceptions=True
    )
    releaser.cancel()
    return list(results)


async def test_two_marks_in_opposite_orders_take_turns_with_the_ordered_lock(
    engine: AsyncEngine,
) -> None:
    results = await _two_marks(engine, locked=True)
    assert results == [None, None]
    async with engine.connect() as conn:
        marked = await conn.scalar(
            select(func.count()).select_from(outbox).where(outbox.c.published_ms == 1)
        )
    assert marked == ROWS


async def test_without_the_lock_the_same_marks_deadlock(engine: AsyncEngine) -> None:
    """The failure the lock prevents, on the same rows and the same interleaving: PostgreSQL
    finds the deadlock and aborts one of the two."""
    results = await _two_marks(engine, locked=False)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert len(failures) == 1 and isinstance(failures[0], DBAPIError), results
    assert "deadlock" in str(failures[0]).lower()
