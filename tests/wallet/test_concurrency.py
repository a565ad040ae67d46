"""Concurrent money movements on PostgreSQL: no overdraft, no lost update."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.connections import sql_engine
from services.common.errors import ServiceError
from services.common.migrate import migrate, version_table
from services.wallet.app import MIGRATIONS
from services.wallet.ledger import Ledger, check_invariants

pytestmark = pytest.mark.integration


async def test_fifty_concurrent_spends_and_escrows_against_one_account(
    pg_engine: AsyncEngine,
) -> None:
    ledger = Ledger(pg_engine)
    await ledger.deposit("d", "hot", 1000)
    for i in range(25):
        await ledger.deposit(f"d{i}", f"opp{i}", 1000)

    async def spend(i: int) -> int:
        try:
            await ledger.hold_spend(f"s{i}", "hot", 30, "boost", f"m{i}")
            return 30
        except ServiceError as err:
            assert err.code == "INSUFFICIENT_FUNDS"
            return 0

    async def escrow(i: int) -> int:
        try:
            await ledger.escrow(f"e{i}", f"m{i}", ["hot", f"opp{i}"], 100)
            return 100
        except ServiceError as err:
            assert err.code == "INSUFFICIENT_FUNDS"
            return 0

    taken = await asyncio.gather(*(spend(i) for i in range(25)), *(escrow(i) for i in range(25)))
    balance = await ledger.balance("hot")
    assert balance >= 0
    assert balance == 1000 - sum(taken)  # every success is counted once: no lost update
    assert sum(taken) > 900  # the account was drained as far as it could be
    assert sum(1 for t in taken if t) < 50  # and some calls were refused


async def test_the_same_key_racing_applies_once(pg_engine: AsyncEngine) -> None:
    ledger = Ledger(pg_engine)
    outcomes = await asyncio.gather(*(ledger.deposit("same", "alice", 100) for _ in range(20)))
    assert await ledger.balance("alice") == 100
    assert len({o.operation_id for o in outcomes}) == 1
    assert sum(not o.replayed for o in outcomes) == 1


async def test_settle_and_refund_racing_close_the_escrow_once(pg_engine: AsyncEngine) -> None:
    ledger = Ledger(pg_engine)
    await ledger.deposit("a", "alice", 500)
    await ledger.deposit("b", "bob", 500)
    await ledger.escrow("e", "m", ["alice", "bob"], 500)
    results = await asyncio.gather(
        *(ledger.settle(f"s{i}", "m", "alice") for i in range(5)),
        *(ledger.refund(f"r{i}", "m") for i in range(5)),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(winners) == 1
    assert all(
        isinstance(r, ServiceError) and r.code == "ESCROW_CLOSED"
        for r in results
        if r not in winners
    )


async def test_replicas_starting_together_migrate_a_fresh_database_once(postgres_url: str) -> None:
    """Several wallet replicas on one PostgreSQL database (`bgcluster up --replicas wallet=3`)
    run their migrations at the same moment: the advisory lock lets one migrate and the others
    find the schema at head, where without it they raced to CREATE TABLE alembic_version
    (now alembic_version_wallet)."""
    from alembic.migration import MigrationContext

    name = f"wallet_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
    engines = [sql_engine(url) for _ in range(3)]
    try:
        await asyncio.gather(*(migrate(e, MIGRATIONS) for e in engines))
        async with engines[0].connect() as c:
            heads = await c.run_sync(
                lambda s: MigrationContext.configure(
                    s, opts={"version_table": version_table(MIGRATIONS)}
                ).get_current_heads()
            )
        assert len(heads) == 1
        assert await check_invariants(engines[0]) == []
    finally:
        for e in engines:
            await e.dispose()
