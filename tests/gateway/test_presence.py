"""Presence on a real Valkey and a Valkey Cluster (issue 13 req. 5, issue 14): the first stream
reports a connect, the last a disconnect; a gateway that dies without closing its streams has its
players reported disconnected once its lease lapses, exactly once across sweepers; a stalled
gateway whose streams were swept reports its players back; renewing costs one call per gateway
however many streams it serves."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis_asyncio

from services.common.deps import redis_client
from services.gateway.presence import GATEWAYS_KEY, Presence, streams_key
from tests.helpers import Valkey

pytestmark = pytest.mark.integration


@pytest.fixture
async def redis(valkey: Valkey) -> AsyncIterator[Any]:
    """A single Valkey and a Valkey Cluster (issue 14: leases are kept per shard)."""
    client = valkey.client()
    yield client
    await client.aclose()


def _ids() -> tuple[str, str]:
    return f"t{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:8]}"


async def test_first_open_and_last_close_are_the_transitions(redis: redis_asyncio.Redis) -> None:
    gw1, gw2 = Presence(redis, ttl_s=5), Presence(redis, ttl_s=5)
    table, player = _ids()
    assert await gw1.opened(table, player, "s1") is True  # connect
    assert await gw2.opened(table, player, "s2") is False  # a second device: still connected
    assert await gw1.closed(table, player, "s1") is False
    assert await gw2.closed(table, player, "s2") is True  # disconnect
    assert await gw2.closed(table, player, "s2") is False  # closing twice reports nothing


async def test_a_dead_gateways_leases_expire_into_one_disconnect(
    redis: redis_asyncio.Redis,
) -> None:
    dead, alive, other = Presence(redis, ttl_s=1), Presence(redis, ttl_s=1), Presence(redis, 1)
    table, player = _ids()
    assert await dead.opened(table, player, "s-dead")
    assert await alive.opened(table, "someone-else", "s-alive")
    for _ in range(3):  # `dead` never renews; `alive` does
        await asyncio.sleep(0.4)
        assert await alive.renew_all() == []
    swept = await asyncio.gather(alive.expired(), other.expired())
    reports = [pair for found in swept for pair in found]
    assert reports.count((table, player)) == 1  # exactly one sweeper reports it
    assert (table, "someone-else") not in reports  # renewed: still connected
    assert await alive.opened(table, player, "s-new")  # back on another gateway: a connect


async def test_a_stalled_gateway_reports_its_swept_players_back(
    redis: redis_asyncio.Redis,
) -> None:
    stalled, sweeper = Presence(redis, ttl_s=1), Presence(redis, ttl_s=1)
    table, player = _ids()
    await stalled.opened(table, player, "s1")
    await asyncio.sleep(1.2)
    assert (table, player) in await sweeper.expired()
    reports: list[tuple[str, str, bool]] = []
    reported = asyncio.Event()

    async def report(t: str, p: str, connected: bool) -> None:
        reports.append((t, p, connected))
        reported.set()

    stop = asyncio.Event()
    task = asyncio.create_task(stalled.run(report, stop))
    await asyncio.wait_for(reported.wait(), 5)
    stop.set()
    await task
    assert reports == [(table, player, True)]


class _Calls:
    def __init__(self) -> None:
        self.n = 0

    def inc(self, amount: float = 1) -> None:
        self.n += int(amount)


async def test_renewing_costs_one_call_however_many_streams(valkey: Valkey) -> None:
    calls = _Calls()
    client = redis_client(valkey.url, cluster=valkey.cluster, round_trips=calls)
    try:
        gateway = Presence(client, ttl_s=5)
        for i in range(200):
            await gateway.opened(f"t{uuid.uuid4().hex[:8]}", f"p{i}", f"s{i}")
        before = calls.n
        assert await gateway.renew_all() == []
        assert calls.n - before == 1
    finally:
        await client.aclose()


async def test_a_lapsed_gateway_moves_its_streams_to_a_new_lease_without_transitions(
    redis: redis_asyncio.Redis,
) -> None:
    """Nobody swept it yet: the players never looked away, so nothing is reported, and the old
    lease is left with no streams for the sweepers to forget."""
    stalled, sweeper = Presence(redis, ttl_s=1), Presence(redis, ttl_s=1)
    table, player = _ids()
    assert await stalled.opened(table, player, "s1")
    old = stalled.gateway
    await asyncio.sleep(1.2)
    moved = await stalled.renew_all()
    assert moved == [(table, player, "s1")] and stalled.gateway != old
    assert await stalled.reopen(*moved[0]) is False  # still connected: no report
    assert await redis.scard(streams_key(old)) == 0
    reports = []  # other tests' dead gateways are swept too (one Valkey for all)
    for _ in range(50):
        reports += await sweeper.expired()
        if await redis.zscore(GATEWAYS_KEY, old) is None:
            break  # forgotten
    assert await redis.zscore(GATEWAYS_KEY, old) is None
    assert (table, player) not in reports  # the old lease had no streams: nothing to report
    assert await stalled.closed(table, player, "s1") is True  # the disconnect, once


async def test_a_stream_closed_while_it_opens_leaves_nothing_behind(
    redis: redis_asyncio.Redis,
) -> None:
    gateway = Presence(redis, ttl_s=5)
    await gateway.renew_all()  # registered: opened() records the stream before its first await
    table, player = _ids()
    opening = asyncio.create_task(gateway.opened(table, player, "s1"))
    await asyncio.sleep(0)  # opened() has recorded the stream and awaits Redis
    assert await gateway.closed(table, player, "s1") is False  # not yet counted
    assert await opening is False
    assert await redis.scard(streams_key(gateway.gateway)) == 0
    assert await gateway.opened(table, player, "s2") is True  # so the next one is the first


async def test_reopening_a_stream_already_under_the_current_lease_changes_nothing(
    redis: redis_asyncio.Redis,
) -> None:
    """A stream opened while the lapse was handled is under the new lease already."""
    gateway = Presence(redis, ttl_s=5)
    table, player = _ids()
    assert await gateway.opened(table, player, "s1")
    assert await gateway.reopen(table, player, "s1") is False
    assert await redis.scard(streams_key(gateway.gateway)) == 1
    assert await gateway.closed(table, player, "s1") is True  # still counted until now
