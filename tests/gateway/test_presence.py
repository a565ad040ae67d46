"""Presence leases on a real Valkey (issue 13 req. 5): the first stream reports a connect, the
last a disconnect; a gateway that dies without closing its streams has its players reported
disconnected once their leases expire, exactly once across sweepers; a stalled gateway whose
leases were swept reports its players back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis_asyncio

from services.gateway.presence import Presence
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
