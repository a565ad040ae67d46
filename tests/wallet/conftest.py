"""Wallet fixtures: a migrated ledger on SQLite and on PostgreSQL; books checked after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.deps import sql_engine
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
