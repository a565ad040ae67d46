"""Bans as every gateway replica sees them (real Valkey and Valkey Cluster): the identity
service writes the live list (services/identity/ban_list.py); each gateway sees a change at its
next sync and ends the banned player's streams there, once."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from services.common.errors import ServiceError
from services.contracts.redis_keys import BANNED
from services.gateway.bans import Bans
from services.identity.ban_list import BanList

pytestmark = pytest.mark.integration


async def test_a_ban_is_seen_by_every_gateway_at_its_next_sync(redis: Any) -> None:
    cut: list[tuple[str, str]] = []
    here = Bans(redis, on_ban=lambda p: cut.append(("here", p)))
    there = Bans(redis, on_ban=lambda p: cut.append(("there", p)))
    await here.sync()
    await there.sync()
    player = "p" + uuid.uuid4().hex[:10]
    await BanList(redis).ban(player)
    assert not here.banned(player) and cut == []
    await here.sync()
    assert here.banned(player) and not there.banned(player) and cut == [("here", player)]
    await there.sync()
    assert there.banned(player) and cut == [("here", player), ("there", player)]
    await there.sync()  # nothing changed: no second cut-off
    assert len(cut) == 2
    await BanList(redis).unban(player)
    await here.sync()
    await there.sync()
    assert not here.banned(player) and not there.banned(player)


async def test_the_sync_loop_picks_a_ban_up_and_restore_refills_a_flushed_set(redis: Any) -> None:
    """Redis is derived here: `restore` puts the SQL record's bans back (after a flush)."""
    player = "p" + uuid.uuid4().hex[:10]
    watcher = Bans(redis, sync_s=0.05)
    stop = asyncio.Event()
    loop = asyncio.create_task(watcher.run(stop))
    try:
        await BanList(redis).ban(player)
        for _ in range(200):  # bounded: ~10 s
            if watcher.banned(player):
                break
            await asyncio.sleep(0.05)
        assert watcher.banned(player)
    finally:
        stop.set()
        await loop
    await redis.srem(BANNED, player)  # as if Redis had lost it
    fresh, other = Bans(redis), Bans(redis)
    fresh.seed([player])  # from the SQL record: enforced at once, Redis or not
    assert fresh.banned(player)
    await fresh.restore()
    await other.sync()
    assert other.banned(player)  # back in Redis for every replica
    await BanList(redis).unban(player)


async def test_the_record_is_asked_for_until_the_identity_service_answers(
    redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway may start before the identity service: the record's bans are asked for again,
    each wait twice the last up to a most, until it answers; then they hold here and go back
    into Redis."""
    player = "p" + uuid.uuid4().hex[:10]
    asked = 0
    waits: list[float] = []

    async def record() -> list[str]:
        nonlocal asked
        asked += 1
        if asked < 6:
            raise ServiceError("UPSTREAM_UNAVAILABLE", "identity is starting")
        return [player]

    async def pause(stop: asyncio.Event, seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr("services.gateway.bans.pause", pause)
    bans = Bans(redis)
    await bans.seed_from(record, asyncio.Event(), every_s=1.0, most_s=8.0)
    assert asked == 6 and waits == [1.0, 2.0, 4.0, 8.0, 8.0] and bans.banned(player)
    await bans.restore()
    other = Bans(redis)
    await other.sync()
    assert other.banned(player)
    await BanList(redis).unban(player)
    stop = asyncio.Event()
    stop.set()
    await bans.seed_from(record, stop)  # stopped: returns at once, asks nothing
    assert asked == 6
