"""Issue 42: the wallet's group commit losing its PostgreSQL connection mid-transaction (a
partition between the wallet and its database, the server restarting): the batch's transaction
dies with it, so none of its operations applies; every call of the batch fails as the retryable
LEDGER_UNAVAILABLE; the next batch runs on a fresh connection; the same calls sent again apply
once each. Killed in two places: after the batch read (and locked) its rows, before it wrote;
and after every write, before the commit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from services.common.errors import infrastructure_failure
from services.wallet import batch_sql
from services.wallet import ledger as ledger_module
from services.wallet.ledger import Ledger, check_invariants
from services.wallet.schema import operations, outbox

pytestmark = pytest.mark.integration


async def _terminate(engine: AsyncEngine, conn: AsyncConnection) -> None:
    """Kill `conn`'s server process from another connection, as a cut link or a restarting
    server would end it."""
    pid = await conn.scalar(text("SELECT pg_backend_pid()"))
    async with engine.connect() as other:
        await other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})


async def _count(engine: AsyncEngine, table: Any) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(table)) or 0)


@pytest.mark.parametrize("where", ["before_writes", "before_commit"])
async def test_a_batch_whose_connection_dies_applies_nothing_and_its_calls_apply_once_again(
    pg_engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    engine = pg_engine
    ledger = Ledger(engine, fee_bps=800)
    await ledger.deposit("fund:alice", "alice", 1000)
    await ledger.deposit("fund:bob", "bob", 1000)
    ops_before, events_before = await _count(engine, operations), await _count(engine, outbox)
    real_save = batch_sql.save
    cut = {"done": False}

    async def save_then_cut(conn: AsyncConnection, *args: Any) -> None:
        first, cut["done"] = not cut["done"], True
        if first and where == "before_writes":
            await _terminate(engine, conn)
        await real_save(conn, *args)
        if first and where == "before_commit":
            await _terminate(engine, conn)  # every row written; the commit is what fails

    monkeypatch.setattr(ledger_module, "save", save_then_cut)
    batch = [
        ledger.escrow("e1", "m1", ["alice", "bob"], 100),
        ledger.hold_spend("s1", "alice", 10, "boost", "m9"),
        ledger.deposit("d1", "bob", 5),
    ]
    results = await asyncio.gather(*batch, return_exceptions=True)
    assert cut["done"]
    assert all(isinstance(r, Exception) for r in results), results
    for r in results:
        typed = infrastructure_failure(r)  # type: ignore[arg-type]
        assert typed is not None and typed.code == "LEDGER_UNAVAILABLE", r
    # Nothing of the batch stands: balances, operations, events, escrows.
    assert (await ledger.balance("alice"), await ledger.balance("bob")) == (1000, 1000)
    assert await _count(engine, operations) == ops_before
    assert await _count(engine, outbox) == events_before
    assert not await ledger.has_escrow("m1")
    assert await check_invariants(engine) == []

    # The same calls again (a client's retry): each applies once, on a fresh connection; and
    # once more, each answers as a replay.
    for attempt in range(2):
        again = await asyncio.gather(
            ledger.escrow("e1", "m1", ["alice", "bob"], 100),
            ledger.hold_spend("s1", "alice", 10, "boost", "m9"),
            ledger.deposit("d1", "bob", 5),
        )
        assert [o.replayed for o in again] == [bool(attempt)] * 3
    assert (await ledger.balance("alice"), await ledger.balance("bob")) == (890, 905)
    assert await _count(engine, operations) == ops_before + 3
    assert await check_invariants(engine) == []
