"""Table fixtures: the core's unit tests run it on the in-memory store (`core`, issue 17); the
Redis store on the session's real Valkey (flushed per test) backs `redis_core` and the
integration tests, each run twice: on a single Valkey and on a 3-primary Valkey Cluster (issue
14: the table service works unchanged on both)."""

from __future__ import annotations

from typing import Any

import pytest

from services.table.adapters.redis_store import TableStore
from services.table.table_core import TableCore
from tests.table.fakes import FakeWallet
from tests.table.memory_store import MemoryTableStore


@pytest.fixture
def wallet() -> FakeWallet:
    return FakeWallet(alice=10_000, bob=10_000)


@pytest.fixture
def core(wallet: FakeWallet) -> TableCore:
    return TableCore(MemoryTableStore(), wallet, clock_scale=0.01)


@pytest.fixture
def redis_core(redis: Any, wallet: FakeWallet) -> TableCore:
    return TableCore(TableStore(redis), wallet, clock_scale=0.01)
