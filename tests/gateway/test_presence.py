"""Presence (issue 13 req. 5, issue 14; the away rule it feeds is I-8): the first stream reports a
connect, the last a disconnect; a gateway that dies without closing its streams has its players
reported disconnected once its lease lapses, exactly once across sweepers; a stalled gateway
whose streams were swept reports its players back. The core runs on the in-memory store with a
clock the test moves (issue 17); tests/gateway/test_presence_store.py holds that store to the
Redis one, and the last test here counts the Redis store's round trips."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from services.common.connections import redis_client
from services.gateway.adapters.redis_presence import RedisPresenceStore
from services.gateway.presence import Presence
from tests.gateway.memory_presence import MemoryPresenceStore
from tests.helpers import Valkey


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def store() -> MemoryPresenceStore:
    return MemoryPresenceStore()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _ids() -> tuple[str, str]:
    return f"t{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:8]}"


async def test_first_open_and_last_close_are_the_transitions(
    store: MemoryPresenceStore, clock: Clock
) -> None:
    gw1, gw2 = Presence(store, 5, clock), Presence(store, 5, clock)
    table, player = _ids()
    assert await gw1.opened(table, player, "s1") is True  # connect
    assert await gw2.opened(table, player, "s2") is False  # a second device: still connected
    assert await gw1.closed(table, player, "s1") is False
    assert await gw2.closed(table, player, "s2") is True  # disconnect
    assert await gw2.closed(table, player, "s2") is False  # closing twice reports nothing


async def test_a_dead_gateways_leases_expire_into_one_disconnect(
    store: MemoryPresenceStore, clock: Clock
) -> None:
    dead, alive, other = (Presence(store, 1, clock) for _ in range(3))
    table, player = _ids()
    assert await dead.opened(table, player, "s-dead")
    assert await alive.opened(table, "someone-else", "s-alive")
    for _ in range(3):  # `dead` never renews; `alive` does
        clock.ms += 400
        assert await alive.renew_all() == []
    swept = await asyncio.gather(alive.expired(), other.expired())
    reports = [pair for found in swept for pair in found]
    assert reports.count((table, player)) == 1  # exactly one sweeper reports it
    assert (table, "someone-else") not in reports  # renewed: still connected
    assert dead.gateway not in store.leases  # nothing left under it: forgotten
    assert await alive.opened(table, player, "s-new")  # back on another gateway: a connect


async def test_a_gateway_within_its_lease_is_not_swept(
    store: MemoryPresenceStore, clock: Clock
) -> None:
    quiet, sweeper = Presence(store, 1, clock), Presence(store, 1, clock)
    table, player = _ids()
    assert await quiet.opened(table, player, "s1")
    clock.ms += 1000  # expiry is inclusive: lapsed only after it
    assert await sweeper.expired() == []
    clock.ms += 1
    assert await sweeper.expired() == [(table, player)]


async def test_a_sweep_closes_at_most_its_batch(store: MemoryPresenceStore, clock: Clock) -> None:
    dead, sweeper = Presence(store, 1, clock), Presence(store, 1, clock)
    for i in range(5):
        await dead.opened(f"t{i}", "p", f"s{i}")
    clock.ms += 2000
    first = await sweeper.expired(limit=3)
    assert len(first) == 3 and dead.gateway in store.leases  # streams left: not forgotten yet
    rest = await sweeper.expired(limit=3)
    assert sorted(first + rest) == [(f"t{i}", "p") for i in range(5)]
    assert await sweeper.expired() == [] and dead.gateway not in store.leases


async def test_a_stalled_gateway_reports_its_swept_players_back(
    store: MemoryPresenceStore, clock: Clock
) -> None:
    stalled, sweeper = Presence(store, 1, clock), Presence(store, 1, clock)
    table, player = _ids()
    await stalled.opened(table, player, "s1")
    clock.ms += 1200
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
    assert await stalled.closed(table, player, "s1") is True  # counted under the new lease


async def test_a_lapsed_gateway_moves_its_streams_to_a_new_lease_without_transitions(
    store: MemoryPresenceStore, clock: Clock
) -> None:
    """Nobody swept it yet: the players never looked away, so nothing is reported, and the old
    lease is left with no streams for the sweepers to forget."""
    stalled, sweeper = Presence(store, 1, clock), Presence(store, 1, clock)
    table, player = _ids()
    assert await stalled.opened(table, player, "s1")
    old = stalled.gateway
    clock.ms += 1200
    moved = await stalled.renew_all()
    assert moved == [(table, player, "s1")] and stalled.gateway != old
    assert await stalled.reopen(*moved[0]) is False  # still connected: no report
    assert await store.streams_of(old, 10) == []
    assert await sweeper.expired() == []  # the old lease had no streams: nothing to report
    assert old not in store.leases  # forgotten
    assert await stalled.closed(table, player, "s1") is True  # the disconnect, once


async def test_a_stream_closed_while_it_opens_leaves_nothing_behind(clock: Clock) -> None:
    class SlowStore(MemoryPresenceStore):
        async def open_stream(self, gateway: str, table_id: str, player_id: str, s: str) -> bool:
            await asyncio.sleep(0)  # a round trip: the stream closes meanwhile
            return await super().open_stream(gateway, table_id, player_id, s)

    store = SlowStore()
    gateway = Presence(store, 5, clock)
    await gateway.renew_all()  # registered: opened() records the stream before its first await
    table, player = _ids()
    opening = asyncio.create_task(gateway.opened(table, player, "s1"))
    await asyncio.sleep(0)  # opened() has recorded the stream and awaits the store
    assert await gateway.closed(table, player, "s1") is False  # not yet counted
    assert await opening is False
    assert await store.streams_of(gateway.gateway, 10) == []
    assert await gateway.opened(table, player, "s2") is True  # so the next one is the first


async def test_reopening_a_stream_already_under_the_current_lease_changes_nothing(
    store: MemoryPresenceStore, clock: Clock
) -> None:
    """A stream opened while the lapse was handled is under the new lease already."""
    gateway = Presence(store, 5, clock)
    table, player = _ids()
    assert await gateway.opened(table, player, "s1")
    assert await gateway.reopen(table, player, "s1") is False
    assert len(await store.streams_of(gateway.gateway, 10)) == 1
    assert await gateway.closed(table, player, "s1") is True  # still counted until now


async def test_a_failing_store_does_not_end_the_presence_task(clock: Clock) -> None:
    class DownStore(MemoryPresenceStore):
        def __init__(self) -> None:
            super().__init__()
            self.rounds = 0
            self.third = asyncio.Event()

        async def lapsed_gateways(self, now_ms: int, limit: int) -> list[str]:
            self.rounds += 1
            if self.rounds == 3:
                self.third.set()
            raise ConnectionError("Redis down")

    store = DownStore()
    presence = Presence(store, 0.03, clock)
    stop = asyncio.Event()

    async def report(t: str, p: str, connected: bool) -> None:
        raise AssertionError("nothing to report")

    task = asyncio.create_task(presence.run(report, stop))
    await asyncio.wait_for(store.third.wait(), 5)  # it keeps trying, round after round
    stop.set()
    await asyncio.wait_for(task, 5)
    assert task.exception() is None


async def test_a_stream_ended_while_the_store_is_away_is_reported_once_it_answers(
    clock: Clock,
) -> None:
    """Found by issue 58's partition runs: a gateway cut off from Valkey logged "Task exception
    was never retrieved" for each Play stream that ended meanwhile, and the stream stayed
    recorded under the gateway's live lease: its player never went away for the table (I-8).
    Now the end is kept, and the presence loop's next round after the store answers closes it
    and reports the disconnect, once."""

    class CutStore(MemoryPresenceStore):
        cut = False

        async def close_stream(self, gateway: str, table_id: str, player: str, s: str) -> bool:
            if self.cut:
                raise ConnectionError("Valkey cut off")
            return await super().close_stream(gateway, table_id, player, s)

    store = CutStore()
    presence = Presence(store, 0.03, clock)
    table, player = _ids()
    assert await presence.opened(table, player, "s1") is True
    store.cut = True
    assert await presence.closed(table, player, "s1") is False  # not failing: kept for later
    assert list(presence.unclosed) == ["s1"]
    reported: list[tuple[str, str, bool]] = []
    answered = asyncio.Event()

    async def report(t: str, p: str, connected: bool) -> None:
        reported.append((t, p, connected))
        answered.set()

    stop = asyncio.Event()
    task = asyncio.create_task(presence.run(report, stop))
    await asyncio.sleep(0.1)  # rounds while the store is still away: nothing reported
    assert reported == [] and list(presence.unclosed) == ["s1"]
    store.cut = False
    await asyncio.wait_for(answered.wait(), 5)
    await asyncio.sleep(0.1)  # more rounds: still once
    stop.set()
    await asyncio.wait_for(task, 5)
    assert reported == [(table, player, False)] and presence.unclosed == {}
    assert await presence.opened(table, player, "s2") is True  # the next stream: a connect


class _Calls:
    def __init__(self) -> None:
        self.n = 0

    def inc(self, amount: float = 1) -> None:
        self.n += int(amount)


@pytest.mark.integration
async def test_renewing_costs_one_redis_call_however_many_streams(valkey: Valkey) -> None:
    calls = _Calls()
    client = redis_client(valkey.url, cluster=valkey.cluster, round_trips=calls)
    try:
        gateway = Presence(RedisPresenceStore(client), ttl_s=5)
        for i in range(200):
            await gateway.opened(f"t{uuid.uuid4().hex[:8]}", f"p{i}", f"s{i}")
        assert await gateway.renew_all() == []  # (loads the script if this Valkey lacks it)
        before = calls.n
        assert await gateway.renew_all() == []
        assert calls.n - before == 1
    finally:
        await client.aclose()
