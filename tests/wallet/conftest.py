"""Wallet fixtures: a migrated ledger on SQLite and on PostgreSQL; books checked after each test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.connections import sql_engine
from services.common.migrate import migrate
from services.wallet.app import MIGRATIONS
from services.wallet.ledger import Ledger, check_invariants
from tests.helpers import sql_url


@pytest.fixture(params=["sqlite", "postgres"])
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    eng = sql_engine(await sql_url(request, tmp_path, "wallet"))
    await migrate(eng, MIGRATIONS)
    try:
        yield eng
        # Invariant check after every test: the books balance whatever the test did.
        assert await check_invariants(eng) == []
    finally:
        await eng.dispose()


@pytest.fixture
def ledger(engine: AsyncEngine) -> Ledger:
    return Ledger(engine, fee_bps=800)


async def fund(ledger: Ledger, **balances: int) -> None:
    for player, amount in balances.items():
        await ledger.deposit(f"fund:{player}:{amount}", player, amount)


@pytest.fixture
async def pg_engine(postgres_url: str) -> AsyncIterator[AsyncEngine]:
    """A fresh, migrated wallet database on the session's PostgreSQL; the books checked after."""
    name = f"wallet_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    engine = sql_engine(postgres_url.rsplit("/", 1)[0] + f"/{name}")
    await migrate(engine, MIGRATIONS)
    yield engine
    assert await check_invariants(engine) == []
    await engine.dispose()
