"""Issue 17: presence's port, one contract for both stores. The in-memory store presence's unit
tests use answers as the Redis store does (its scripts, on a single Valkey and a Valkey
Cluster, where each script touches one slot)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.gateway.adapters.redis_presence import RedisPresenceStore
from services.gateway.ports import PresenceRepository
from services.identity.adapters.redis_presence import RedisPlayerPresence
from tests.gateway.memory_presence import MemoryPresenceStore
from tests.helpers import flushed_client

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "valkey", "valkey-cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[PresenceRepository]:
    if request.param == "memory":
        yield MemoryPresenceStore()
        return
    client = await flushed_client(request, request.param)
    yield RedisPresenceStore(client)
    await client.aclose()


async def test_leases_renew_until_they_lapse_and_are_forgotten_only_then(
    store: PresenceRepository,
) -> None:
    await store.take_lease("g1", 1000)
    await store.take_lease("g2", 2000)
    assert await store.lapsed_gateways(1000, 10) == []  # expiry is inclusive
    assert await store.lapsed_gateways(1500, 10) == ["g1"]
    assert await store.lapsed_gateways(2500, 1) == ["g1"]  # oldest first, at most `limit`
    assert await store.renew_lease("g2", 3000, 1500)
    assert not await store.renew_lease("g1", 3000, 1500)  # lapsed: left to the sweepers
    assert await store.lapsed_gateways(2500, 10) == ["g1"]  # not renewed
    await store.forget("g2", 2500)  # not lapsed: kept
    assert not await store.renew_lease("g9", 3000, 0)  # never held
    await store.forget("g1", 1500)
    assert await store.lapsed_gateways(2900, 10) == []
    assert not await store.renew_lease("g1", 5000, 0)  # forgotten: gone for good
    assert await store.renew_lease("g2", 4000, 3000)


async def test_streams_report_first_in_and_last_out_per_table_and_player(
    store: PresenceRepository,
) -> None:
    assert await store.open_stream("g1", "t1", "ann", "s1")  # first: a connect
    assert not await store.open_stream("g1", "t1", "ann", "s1")  # the same again: nothing
    assert not await store.open_stream("g2", "t1", "ann", "s2")  # a second device
    assert await store.open_stream("g2", "t1", "bob", "s3")  # another player: his own first
    assert await store.open_stream("g2", "t2", "ann", "s4")  # another table: its own first
    assert sorted(await store.streams_of("g2", 10)) == [
        ("t1", "ann", "s2"), ("t1", "bob", "s3"), ("t2", "ann", "s4"),
    ]  # fmt: skip
    assert len(await store.streams_of("g2", 2)) == 2
    assert not await store.close_stream("g1", "t1", "ann", "s1")  # s2 still open
    assert await store.close_stream("g2", "t1", "ann", "s2")  # the last: a disconnect
    assert not await store.close_stream("g2", "t1", "ann", "s2")  # closing twice: nothing
    assert not await store.close_stream("g1", "t1", "ann", "never")  # unknown: nothing
    assert await store.streams_of("g1", 10) == []
    assert sorted(await store.streams_of("g2", 10)) == [("t1", "bob", "s3"), ("t2", "ann", "s4")]
    assert await store.open_stream("g1", "t1", "ann", "s5")  # back: a connect again


async def test_a_gateway_off_by_30_s_takes_no_live_lease_for_lapsed_on_the_store_clock(
    valkey_url: str,
) -> None:
    """Issue 42 (I-40): leases expire by the store's clock. On it, a gateway whose own clocks
    run 30 s off takes no live gateway's lease for lapsed; reading its wall clock 30 s fast
    (the old way, shown last) it would, and report that gateway's players away."""
    import time

    import redis.asyncio as redis_asyncio

    from services.common.clock import now_ms
    from services.common.store_clock import StoreClock, redis_times
    from services.gateway.presence import Presence

    client = redis_asyncio.Redis.from_url(valkey_url)
    await client.flushdb()
    store = RedisPresenceStore(client)
    live = Presence(store, ttl_s=15, clock=now_ms)
    await live.opened("t1", "ann", "s1")
    skewed = StoreClock(redis_times(client), local=lambda: time.monotonic() + 30.0)
    await skewed.sync()
    steady = Presence(store, ttl_s=15, clock=skewed)
    assert await steady.expired() == []
    assert (await RedisPlayerPresence(client).tables_of(["ann"], skewed())) == {"ann": {"t1"}}
    wall_fast = Presence(store, ttl_s=15, clock=lambda: now_ms() + 30_000)
    assert await wall_fast.expired() == [("t1", "ann")]  # the old way: a false disconnect
    await client.aclose()
