"""Wagered tournaments' money on the wallet: buy-in holds, the start and the payout of a field.

For fields of 8 and 64 on SQLite and PostgreSQL (each a fresh migrated ledger): every player's
buy-in held at once (the registrations of a filling sit-and-go, group-committed), the start
(one operation capturing the whole field), then the payout by rank. Beside them, in the same run
and the same ledger, escrow+settle pairs one at a time: the ratio says what a tournament's money
costs against the matches it replaces. The books are checked after every run.
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
from services.matchmaking.bracket import Bracket, prizes
from services.wallet.app import MIGRATIONS
from services.wallet.ledger import Ledger, check_invariants
from services.wallet.pools import Pools

PAIRS = 100
BUY_IN = 100


async def _measure(url: str, field: int) -> dict[str, float]:
    engine = sql_engine(url)
    await migrate(engine, MIGRATIONS)
    ledger, pools = Ledger(engine), Pools(Ledger(engine))
    run = uuid.uuid4().hex[:6]
    players = [f"{run}-p{i}" for i in range(field)]
    for p in players:
        await ledger.deposit(f"{p}-d", p, 1_000_000)
    tournament = f"{run}-t"
    started = time.perf_counter()
    await asyncio.gather(
        *(pools.hold_buyin(f"buyin:{tournament}:{p}:0", tournament, p, BUY_IN) for p in players)
    )
    held = time.perf_counter()
    start = await pools.start(f"start:{tournament}", tournament, players)
    captured = time.perf_counter()
    bracket = Bracket(players)
    for r in range(1, bracket.rounds + 1):
        for m in bracket.matches(r):
            if m.top and m.bottom:
                bracket = bracket.record(r, m.slot, m.top)
    await pools.pay(
        f"prizes:{tournament}", tournament, prizes(start.payout, bracket.ranks(), field)
    )
    paid = time.perf_counter()
    before = time.perf_counter()
    for i in range(PAIRS):
        a, b = players[(2 * i) % field], players[(2 * i + 1) % field]
        await ledger.escrow(f"{run}-e{i}", f"{run}-m{i}", [a, b], BUY_IN)
        await ledger.settle(f"{run}-s{i}", f"{run}-m{i}", a)
    pair_ms = (time.perf_counter() - before) * 1000 / PAIRS
    problems = await check_invariants(engine)
    await engine.dispose()
    if problems:
        raise AssertionError(f"the books do not balance: {problems}")
    return {
        "hold_ms": (held - started) * 1000 / field,
        "start_ms": (captured - held) * 1000,
        "pay_ms": (paid - captured) * 1000,
        "pair_ms": pair_ms,
    }


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-pools-"))
    pg = start_postgres(workdir / "pg")
    try:
        for field in (8, 64):
            for name, url in (
                ("SQLite", f"sqlite+aiosqlite:///{workdir}/p{field}.db"),
                ("PostgreSQL", pg.address),
            ):
                m = asyncio.run(_measure(url, field))
                whole = m["hold_ms"] * field + m["start_ms"] + m["pay_ms"]
                print(
                    f"   field {field:2d} {name:10}: buy-in hold {m['hold_ms']:5.2f} ms/player "
                    f"(all at once), start {m['start_ms']:5.1f} ms, payout {m['pay_ms']:5.1f} ms; "
                    f"the whole {whole:6.1f} ms = {whole / m['pair_ms']:4.1f} escrow+settle "
                    f"pairs ({m['pair_ms']:4.1f} ms each, one at a time) for {field - 1} matches"
                )
    finally:
        pg.stop()
