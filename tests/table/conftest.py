"""Table fixtures: a store on the session's real Valkey (flushed per test), a core with a
fake wallet."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis_asyncio

from services.table.store import TableStore
from services.table.tables import TableCore
from tests.table.fakes import FakeWallet


@pytest.fixture
async def redis(valkey_url: str) -> AsyncIterator[redis_asyncio.Redis]:
    client = redis_asyncio.Redis.from_url(valkey_url)
    await client.flushdb()
    yield client
    await client.aclose()


@pytest.fixture
def wallet() -> FakeWallet:
    return FakeWallet(alice=10_000, bob=10_000)


@pytest.fixture
def core(redis: redis_asyncio.Redis, wallet: FakeWallet) -> TableCore:
    return TableCore(TableStore(redis), wallet, clock_scale=0.01)
