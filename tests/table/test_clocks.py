"""Every kind of timeout fires through the clock worker, once, with scaled clocks (real Valkey)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
import redis.asyncio as redis_asyncio

from bg.events.v1 import events_pb2
from engine import commands as c
from engine import profiles
from engine.machine import new_match
from services.common.clock import now_ms
from services.common.connections import reply_text
from services.contracts.redis_keys import WAKE_CHANNEL
from services.contracts.shards import shard_of
from services.table.adapters.redis_store import TableStore
from services.table.clock import ClockWorker
from services.table.ports import Commit, CommitStatus, TableMeta
from services.table.table_core import TableCore
from tests.helpers import kind, load_table
from tests.table.driver import deal, options, redis_store
from tests.table.fakes import FakeWallet

pytestmark = pytest.mark.integration
P = ["alice", "bob"]


async def _events(core: TableCore, table_id: str) -> list[events_pb2.TableEvent]:
    out = []
    for _, data in await core.store.events(table_id, 0, 100_000):
        ev = events_pb2.TableEvent()
        ev.ParseFromString(data)
        out.append(ev)
    return out


async def _until(
    core: TableCore,
    table_id: str,
    pred: Callable[[list[events_pb2.TableEvent]], bool],
    timeout_s: float = 30.0,
) -> list[events_pb2.TableEvent]:
    for _ in range(int(timeout_s / 0.02)):
        events = await _events(core, table_id)
        if pred(events):
            return events
        await asyncio.sleep(0.02)
    raise AssertionError(
        f"not reached; last events: {[kind(e) for e in (await _events(core, table_id))[-8:]]}"
    )


@pytest.fixture
async def clocked(
    redis: redis_asyncio.Redis, request: pytest.FixtureRequest
) -> AsyncIterator[TableCore]:
    """A core whose clocks run 1,000 times fast (or `clock_scale`'s marker value)."""
    marker = request.node.get_closest_marker("clock_scale")
    scale = marker.args[0] if marker else 0.001
    core = TableCore(TableStore(redis), FakeWallet(alice=10_000, bob=10_000), clock_scale=scale)
    stop = asyncio.Event()
    task = asyncio.create_task(ClockWorker(redis_store(core), core).run(stop))
    yield core
    stop.set()
    await task


def _types(events: list[events_pb2.TableEvent]) -> list[str]:
    return [kind(e) for e in events]


def _assert_one_timeout_per_turn(events: list[events_pb2.TableEvent]) -> None:
    """Between two turn starts, at most one turn timeout: none missed, none doubled."""
    since_start = 0
    for ev in events:
        if kind(ev) == "turn_started":
            since_start = 0
        elif kind(ev) == "timed_out" and ev.timed_out.clock == events_pb2.DEADLINE_KIND_TURN:
            since_start += 1
            assert since_start == 1


async def test_idle_wagered_match_is_played_by_the_clock_to_the_end(clocked: TableCore) -> None:
    """I-7 turn timeouts and the 3 s next-game deal, with nobody touching the table."""
    await deal(clocked, "t1", "m1", P, options("wagered", match_length=3, bet=100))
    events = await _until(clocked, "t1", lambda evs: "match_ended" in _types(evs), timeout_s=60)
    types = _types(events)
    assert types.count("game_started") >= 2  # next games dealt by the clock
    assert types.count("timed_out") > 20
    _assert_one_timeout_per_turn(events)


# Two commands go in before the double's clock starts: at 1,000 times, the mover's turn clock
# (a few tens of ms) ran out under four test workers' load and refused the double.
@pytest.mark.clock_scale(0.01)
async def test_unanswered_double_is_dropped(clocked: TableCore) -> None:
    await clocked.create_match("t1", "m1", P, options("wagered", match_length=1, bet=100))
    for player in P:  # at the table: I-41's away clock from the deal (60 ms here) must not race
        await clocked.presence("t1", player, connected=True)
    loaded = await clocked.store.load("t1")
    assert loaded is not None
    m = loaded.state.match
    assert m.play is not None
    await clocked.submit(
        "t1", P[m.turn], m.turn, "", 0, c.SubmitPlay(m.turn, m.play.plays[0].steps)
    )
    seat = 1 - m.turn
    await clocked.submit("t1", P[seat], seat, "", 0, c.OfferDouble(seat))
    events = await _until(clocked, "t1", lambda evs: "double_dropped" in _types(evs))
    dropped = next(e for e in events if kind(e) == "double_dropped")
    assert dropped.double_dropped.reason == events_pb2.DROP_REASON_TIMEOUT


async def test_scored_warning_then_move_time_is_leaving(clocked: TableCore) -> None:
    await clocked.create_match("t1", "m1", P, options("scored", match_length=3, move_time_s=60))
    events = await _until(clocked, "t1", lambda evs: "match_ended" in _types(evs))
    types = _types(events)
    assert types.index("move_time_warning") < types.index("timed_out") < types.index("match_ended")
    assert (
        next(e for e in events if kind(e) == "match_ended").match_ended.reason
        == events_pb2.END_REASON_MOVE_TIME
    )


async def test_scored_confirm_window_passes_the_turn(clocked: TableCore) -> None:
    await clocked.create_match("t1", "m1", P, options("scored", match_length=1, test_game=True))
    loaded = await clocked.store.load("t1")
    assert loaded is not None
    seat = loaded.state.match.turn
    rolled = await clocked.submit("t1", P[seat], seat, "", 0, c.Roll(seat))
    state = (await load_table(clocked.store, "t1")).state.match
    if state.phase.value == "moving":
        assert state.play is not None
        for frm, to in state.play.plays[0].steps:
            await clocked.submit("t1", P[seat], seat, "", 0, c.Move(seat, frm, to))
        kinds: tuple[str, ...] = ("awaiting_confirm", "turn_ended")
    else:
        kinds = ("turn_passed",)  # no legal move: the 3 s "Got it" window
    del rolled
    events = await _until(clocked, "t1", lambda evs: all(k in _types(evs) for k in kinds))
    assert kind(events[-1]) == "turn_started" and events[-1].turn_started.seat == 1 - seat


async def test_casual_auto_roll_after_25_s(clocked: TableCore) -> None:
    await clocked.create_match("t1", "m1", P, options("casual", match_length=1))
    loaded = await clocked.store.load("t1")
    assert loaded is not None
    m = loaded.state.match
    assert m.play is not None
    await clocked.submit(
        "t1", P[m.turn], m.turn, "", 0, c.SubmitPlay(m.turn, m.play.plays[0].steps)
    )
    events = await _until(
        clocked,
        "t1",
        lambda evs: any(kind(e) == "dice_rolled" and e.dice_rolled.auto for e in evs),
    )
    assert kind(events[-1]) in ("dice_rolled", "checkers_moved", "turn_passed", "turn_started")


async def test_presence_window_forfeits_after_60_s(clocked: TableCore) -> None:
    await deal(clocked, "t1", "m1", P, options("wagered", match_length=3, bet=100))
    await clocked.presence("t1", "bob", connected=False)
    await clocked.presence("t1", "bob", connected=False)  # idempotent
    events = await _until(clocked, "t1", lambda evs: "match_ended" in _types(evs))
    ended = next(e for e in events if kind(e) == "match_ended").match_ended
    assert (ended.winner_seat, ended.reason) == (0, events_pb2.END_REASON_AWAY)


async def test_async_table_expires_after_45_idle_days(redis: redis_asyncio.Redis) -> None:
    core = TableCore(TableStore(redis), FakeWallet(), clock_scale=1e-7)  # 45 days -> 0.39 s
    stop = asyncio.Event()
    task = asyncio.create_task(ClockWorker(redis_store(core), core).run(stop))
    try:
        await core.create_match("t1", "m1", P, options("casual", async_mode=True))
        events = await _until(core, "t1", lambda evs: "match_closed" in _types(evs))
        assert events[-1].match_closed.reason == events_pb2.END_REASON_ASYNC_EXPIRED
    finally:
        stop.set()
        await task


async def test_a_commit_wakes_the_clock_workers_only_when_its_shard_is_due_sooner(
    redis: redis_asyncio.Redis,
) -> None:
    """The wake-up is published when a commit makes its shard's earliest deadline sooner; one
    that moves a deadline later (every move pushes the mover's on) wakes nobody, and a worker
    that wakes at the old one finds nothing due and reads the shard again."""
    store = TableStore(redis)
    pubsub = redis.pubsub()
    await pubsub.subscribe(WAKE_CHANNEL)
    await pubsub.get_message(timeout=1.0)  # the subscription's confirmation
    state = new_match(profiles.casual(1), b"\x01" * 16, 0).state
    meta = TableMeta(table_id="woken", match_id="woken-1", player_ids=P)
    shard = shard_of("woken")
    seq: int | None = None
    heard: list[str] = []
    try:
        for deadline in (20_000, 30_000, 10_000, 10_000):  # first, later, sooner, the same
            now = now_ms()
            result = await store.commit(
                Commit(
                    "woken", seq, state, now + deadline, "", [], now,
                    meta=meta if seq is None else None,
                )
            )  # fmt: skip
            assert result.status is CommitStatus.OK
            seq = result.seq
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
            if message is not None:
                heard.append(reply_text(message["data"]))
        assert [h.split(":")[0] for h in heard] == [str(shard), str(shard)]  # first and sooner
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]


async def test_due_tables_come_most_overdue_first_across_shards(
    redis: redis_asyncio.Redis,
) -> None:
    """After a backlog the clock worker fires the latest deadlines first, whichever shard holds
    them, and at most its batch at a time (issue 43: the deal's first deadlines)."""
    store = TableStore(redis)
    state = new_match(profiles.casual(1), b"\x01" * 16, 0).state
    by_shard: dict[int, str] = {}
    for n in range(200):
        by_shard.setdefault(shard_of(f"overdue-{n}"), f"overdue-{n}")
        if len(by_shard) == 5:
            break
    tables = list(by_shard.values())
    now = now_ms()
    overdue_s = {tables[0]: 1, tables[1]: 5, tables[2]: 3, tables[3]: 4, tables[4]: 2}
    for table_id, late_s in overdue_s.items():
        meta = TableMeta(table_id=table_id, match_id=f"{table_id}-1", player_ids=P)
        made = await store.commit(
            Commit(table_id, None, state, now - late_s * 1000, "", [], now, meta=meta)
        )
        assert made.status is CommitStatus.OK
    shards = list(by_shard)
    assert await store.due(shards, now_ms(), 3) == [tables[1], tables[3], tables[2]]
    assert await store.due(shards, now_ms(), 10) == [
        tables[1],
        tables[3],
        tables[2],
        tables[4],
        tables[0],
    ]
    assert await store.due(shards, now - 4500, 10) == [tables[1]]  # only what is due by then


@pytest.mark.single_valkey  # the test kills the one server's pub/sub connections
async def test_a_wake_up_channel_the_client_reconnected_by_itself_makes_the_worker_sweep(
    redis: redis_asyncio.Redis,
) -> None:
    """redis-py connects again and subscribes again by itself when a pub/sub connection breaks
    (the services' retry policy): no error reaches the worker, and the hints published meanwhile
    are lost; the worker sweeps its shards as after a failure."""
    core = TableCore(TableStore(redis), FakeWallet(alice=10_000, bob=10_000), clock_scale=0.001)
    worker = ClockWorker(redis_store(core), core)
    stop = asyncio.Event()
    listening = asyncio.create_task(worker._listen(stop))
    try:
        for _ in range(100):  # bounded: 5 s
            if await redis.client_list(_type="pubsub"):
                break
            await asyncio.sleep(0.05)
        worker._swept_ms = 1  # swept a moment ago
        await redis.client_kill_filter(_type="pubsub")
        for _ in range(100):
            if worker._swept_ms == 0:
                break
            await asyncio.sleep(0.05)
        assert worker._swept_ms == 0
        assert await redis.client_list(_type="pubsub")  # and it listens again
    finally:
        stop.set()
        await listening
