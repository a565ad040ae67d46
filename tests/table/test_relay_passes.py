"""A relay pass's leases and acknowledgements over more tables than one script call takes
(TABLES_PER_CALL), on a single Valkey and on a Valkey Cluster: every table leased once, but the
one another relay holds; every pointer moved, every lease ended, caught-up tables unmarked."""

from __future__ import annotations

from typing import Any

import pytest

from services.common.lean_redis import LeanRedis
from services.contracts.redis_keys import relay_key, relay_lock_key, table_key
from services.contracts.shards import shard_of
from services.table.adapters.redis_store import TABLES_PER_CALL, TableStore
from tests.helpers import Valkey


async def test_a_pass_over_hundreds_of_tables_leases_and_acknowledges_each(redis: Any) -> None:
    await _a_pass(TableStore(redis), redis)


@pytest.mark.single_valkey
async def test_a_pass_by_the_lean_client_leases_and_acknowledges_each(
    redis: Any, valkey: Valkey
) -> None:
    """The same pass with the scripts sent as a table replica sends them on a standalone Redis
    (services/common/lean_redis.py: the calls of a pass pipelined on one connection)."""
    lean = LeanRedis(valkey.url)
    try:
        await _a_pass(TableStore(redis, lean), redis)
    finally:
        await lean.aclose()


async def _a_pass(store: TableStore, redis: Any) -> None:
    tables = [f"t{i}" for i in range(2 * TABLES_PER_CALL + 44)]
    for t in tables:
        await redis.hset(table_key(t), mapping={"seq": 3, "relayed": 1})
        await redis.zadd(relay_key(shard_of(t)), {t: 1000})
    held = tables[7]
    await redis.set(relay_lock_key(held), "other")
    leased = await store.lease_for_relay(tables, "mine", 10_000)
    assert set(leased) == set(tables) - {held}
    assert all(state.relayed == 1 for state in leased.values())
    await store.relay_ack_many({t: 3 for t in leased}, None, 0, "mine")
    assert [await store.relayed(t) for t in tables].count(3) == len(tables) - 1
    assert await store.relayed(held) == 1
    assert await redis.get(relay_lock_key(held)) == b"other"  # not ours to end
    assert all([await redis.exists(relay_lock_key(t)) == 0 for t in leased])
    pending = await store.pending_tables(None, 1000)
    assert [t for t, _ in pending] == [held]  # every caught-up table unmarked
