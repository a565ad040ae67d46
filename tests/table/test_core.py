"""The table core on real Valkey: whole matches, typed refusals, duplicates, stale seqs, wallet."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable
from typing import TypeVar, cast

import pytest

from bg.table.v1 import table_pb2
from engine import commands as c
from engine.profiles import RulesOptions
from services.common.backoff import pause
from services.common.errors import ServiceError
from services.contracts.redis_keys import stream_key
from services.contracts.table_options import rules_from_proto
from services.table.adapters.redis_store import TableStore
from services.table.clock import ClockWorker
from services.table.convert import options_to_proto
from services.table.ports import MatchRecord, OutcomeState
from services.table.table_core import TableCore
from tests.helpers import kind, load_table
from tests.table.driver import deadline_of, deal, options, play
from tests.table.fakes import FakePublisher, FakeWallet
from tests.table.memory_store import MemoryTableStore

T = TypeVar("T")


pytestmark = pytest.mark.integration
P = ["alice", "bob"]


async def _memory_clock(core: TableCore, store: MemoryTableStore, stop: asyncio.Event) -> None:
    """The clock worker's job on the in-memory store: fire each deadline once it is due."""
    while not stop.is_set():
        now = core.now()
        for table_id, at in list(store.deadlines.items()):
            if at <= now:
                await core.fire_deadline(table_id)
        await pause(stop, 0.005)


async def _with_clock(core: TableCore, work: Awaitable[T]) -> T:
    stop = asyncio.Event()
    store = core.store
    ticking = (
        _memory_clock(core, store, stop)
        if isinstance(store, MemoryTableStore)
        else ClockWorker(cast(TableStore, store), core).run(stop)
    )
    worker = asyncio.create_task(ticking)
    try:
        return await work
    finally:
        stop.set()
        await worker


@pytest.mark.parametrize(
    "opts",
    [
        options("wagered", match_length=1, bet=100),
        options("wagered", match_length=3, bet=200),
        options("scored", match_length=3),
        options("casual", match_length=3, cube=True),
        options("casual", match_length=1, async_mode=True),
    ],
    ids=["wagered1", "wagered3", "scored3", "casual3-cube", "casual-async"],
)
async def test_whole_matches_of_every_profile(core: TableCore, opts: RulesOptions) -> None:
    await _whole_match(core, opts)


async def test_a_whole_match_on_redis_with_its_clock_worker(redis_core: TableCore) -> None:
    """The same through the Redis store's Lua scripts and the clock worker's shard sets."""
    await _whole_match(redis_core, options("wagered", match_length=3, bet=200))


async def _whole_match(core: TableCore, opts: RulesOptions) -> None:
    fingerprint, seq, existed = await deal(core, "t1", "m1", P, opts)
    assert len(fingerprint) == 64 and seq > 0 and not existed
    phase = await _with_clock(core, play(core, "t1", P, random.Random(1)))
    assert phase == "match_over"
    loaded = await core.store.load("t1")
    assert loaded is not None
    events = await core.store.events("t1", 0, 100_000)
    assert [s for s, _ in events] == list(range(1, loaded.seq + 1))  # contiguous seqs
    record = await core.record("t1", "m1")
    assert record.fingerprint == fingerprint and len(record.seed_hex) == 32
    assert await deadline_of(core.store, "t1") is None  # no deadline left


async def test_refusals_are_typed_and_change_nothing(core: TableCore) -> None:
    await core.create_match("t1", "m1", P, options("casual"))
    loaded = await core.store.load("t1")
    assert loaded is not None
    seat = loaded.state.match.turn
    other = 1 - seat
    before = (
        loaded.seq,
        len(await core.store.events("t1", 0)),
        await deadline_of(core.store, "t1"),
    )
    cases = [
        (P[other], other, c.Move(other, 8, 5), "NOT_YOUR_TURN"),
        (P[seat], other, c.Roll(other), "NOT_YOUR_SEAT"),
        (P[seat], seat, c.Move(seat, 13, 12), "ILLEGAL_STEP"),
        (P[seat], seat, c.OfferDouble(seat), "WRONG_PHASE"),
        (P[seat], seat, c.Boost(seat), "NOT_AVAILABLE"),
        (P[seat], 7, c.Roll(7), "BAD_SEAT"),
    ]
    for player, s, cmd, code in cases:
        with pytest.raises(ServiceError) as err:
            await core.submit("t1", player, s, "", 0, cmd)
        assert err.value.code == code, (cmd, err.value)
    with pytest.raises(ServiceError) as stale:
        await core.submit("t1", P[seat], seat, "", loaded.seq - 1, c.Undo(seat))
    assert stale.value.code == "STALE_SEQ"
    with pytest.raises(ServiceError) as unknown:
        await core.submit("nope", P[seat], seat, "", 0, c.Roll(seat))
    assert unknown.value.code == "UNKNOWN_TABLE"
    after = await core.store.load("t1")
    assert after is not None and after.state == loaded.state
    assert (
        after.seq,
        len(await core.store.events("t1", 0)),
        await deadline_of(core.store, "t1"),
    ) == before


async def test_duplicate_command_ids_return_the_original_result(core: TableCore) -> None:
    await core.create_match("t1", "m1", P, options("scored", match_length=1))
    loaded = await core.store.load("t1")
    assert loaded is not None
    seat = loaded.state.match.turn
    first = await core.submit("t1", P[seat], seat, "cmd-1", loaded.seq, c.Roll(seat))
    again = await core.submit("t1", P[seat], seat, "cmd-1", loaded.seq, c.Roll(seat))
    assert again.duplicate and again.seq == first.seq
    assert [e.event_id for e in again.events] == [e.event_id for e in first.events]
    assert (await load_table(core.store, "t1")).seq == first.seq


async def test_creating_twice_is_idempotent_and_a_busy_table_refuses_another_match(
    core: TableCore,
) -> None:
    f1, _, _ = await core.create_match("t1", "m1", P, options("casual"))
    f2, _, existed = await core.create_match("t1", "m1", P, options("casual"))
    assert existed and f1 == f2
    with pytest.raises(ServiceError) as err:
        await core.create_match("t1", "m2", P, options("casual"))
    assert err.value.code == "TABLE_BUSY"
    for bad, field in (
        (table_pb2.TableOptions(profile="wagered", bet=150), "bet"),
        (table_pb2.TableOptions(profile="chess"), "profile"),
        (table_pb2.TableOptions(profile="scored", move_time_s=5), "move_time_s"),
    ):
        with pytest.raises(ServiceError) as invalid:
            rules_from_proto(bad)  # what CreateMatch reads its options with
        assert invalid.value.code == "INVALID_OPTION" and invalid.value.field == field
    with pytest.raises(ServiceError):
        await core.create_match("t3", "m3", ["alice", "alice"], options("casual"))


async def test_preferences_apply_to_later_matches(core: TableCore) -> None:
    await core.set_auto_roll("bob", True)
    await core.create_match("t1", "m1", P, options("wagered", match_length=3, bet=100))
    loaded = await core.store.load("t1")
    assert loaded is not None and loaded.state.match.auto_roll == (False, True)


async def test_boost_holds_then_captures_only_when_applied(
    core: TableCore, wallet: FakeWallet
) -> None:
    """Issue 13: a boost is charged only if it is applied (hold, commit, capture)."""
    await core.create_match("t1", "m1", P, options("wagered", match_length=3, bet=100))
    loaded = await core.store.load("t1")
    assert loaded is not None
    seat = loaded.state.match.turn
    deadline = loaded.state.match.clock_deadline_ms
    out = await core.submit("t1", P[seat], seat, "", 0, c.Boost(seat))
    assert kind(out.events[0]) == "boost_applied"
    await core.captures_done()  # spent after the answer (issue 58)
    assert wallet.balances[P[seat]] == 10_000 - 10
    assert wallet.captured == [f"boost:m1:1:{seat}:1"]
    after = await load_table(core.store, "t1")
    assert deadline is not None and after.state.match.clock_deadline_ms == deadline + 100
    wallet.balances[P[seat]] = 5  # cannot pay: no hold, no boost
    with pytest.raises(ServiceError) as err:
        await core.submit("t1", P[seat], seat, "", 0, c.Boost(seat))
    assert err.value.code == "INSUFFICIENT_FUNDS"
    assert (await load_table(core.store, "t1")).state.match.boosts_used[seat] == 1
    # Not this seat's turn: the rules refuse it before any money is held.
    wallet.balances[P[seat]] = 10_000
    calls = len(wallet.calls)
    with pytest.raises(ServiceError) as err:
        await core.submit("t1", P[1 - seat], 1 - seat, "", 0, c.Boost(1 - seat))
    assert err.value.code == "NOT_YOUR_TURN" and len(wallet.calls) == calls
    # Wallet down: the boost is refused as retryable, nothing applied, nothing charged.
    wallet.down = True
    with pytest.raises(ServiceError) as err:
        await core.submit("t1", P[seat], seat, "", 0, c.Boost(seat))
    assert err.value.code == "UPSTREAM_UNAVAILABLE"
    assert (await load_table(core.store, "t1")).state.match.boosts_used[seat] == 1
    assert wallet.balances[P[seat]] == 10_000


async def _to_doubling_turn(core: TableCore) -> int:
    """Play the opening move: the next turn may double. Returns the seat on turn."""
    loaded = await core.store.load("t1")
    assert loaded is not None
    m = loaded.state.match
    assert m.play is not None
    play = m.play.plays[0]
    await core.submit("t1", P[m.turn], m.turn, "", 0, c.SubmitPlay(m.turn, play.steps))
    return int((await load_table(core.store, "t1")).state.match.turn)


async def test_i4_double_holds_the_raise_and_the_take_captures_it(
    core: TableCore, wallet: FakeWallet
) -> None:
    await core.create_match("t1", "m1", P, options("wagered", match_length=1, bet=500))
    wallet.escrow["m1"] = 500
    seat = await _to_doubling_turn(core)
    wallet.balances[P[1 - seat]] = 100  # the opponent cannot cover another 500
    with pytest.raises(ServiceError) as err:
        await core.submit("t1", P[seat], seat, "", 0, c.OfferDouble(seat))
    assert err.value.code == "CANNOT_COVER"
    assert wallet.holds == {}
    wallet.balances[P[1 - seat]] = 10_000
    await core.submit("t1", P[seat], seat, "", 0, c.OfferDouble(seat))
    assert wallet.balances == {"alice": 9_500, "bob": 9_500}  # both raises held at the offer
    assert list(wallet.holds) == ["raise:m1:1:2"] and wallet.captured == []
    taken = await core.submit("t1", P[1 - seat], 1 - seat, "", 0, c.Take(1 - seat))
    assert kind(taken.events[0]) == "double_taken"
    assert taken.events[0].double_taken.game_no == 1 and taken.events[0].double_taken.cube == 2
    await core.captures_done()  # captured after the answer (issue 58)
    assert wallet.escrow["m1"] == 1000 and wallet.captured == ["raise:m1:1:2"]


async def test_a_take_needs_no_wallet_so_an_outage_is_not_a_drop(
    core: TableCore, wallet: FakeWallet
) -> None:
    """Issue 13: the wallet down at the take: the take still stands (its raise was held at the
    offer); the capture waits for the consumer or settlement."""
    await core.create_match("t1", "m1", P, options("wagered", match_length=1, bet=500))
    wallet.escrow["m1"] = 500
    seat = await _to_doubling_turn(core)
    await core.submit("t1", P[seat], seat, "", 0, c.OfferDouble(seat))
    wallet.down = True
    taken = await core.submit("t1", P[1 - seat], 1 - seat, "", 0, c.Take(1 - seat))
    assert kind(taken.events[0]) == "double_taken"
    loaded = await core.store.load("t1")
    assert loaded is not None and loaded.state.match.cube == 2
    await core.captures_done()
    assert wallet.captured == []  # deferred, not lost: the hold is still there
    assert "raise:m1:1:2" in wallet.holds


async def test_a_takes_answer_does_not_wait_for_its_capture(
    core: TableCore, wallet: FakeWallet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 58: with the wallet cut off from its database, a take waited 3 s for its answer on
    the capture of its raise, which is best effort. The answer comes first; the capture goes on
    after it, and lands."""
    await core.create_match("t1", "m1", P, options("wagered", match_length=1, bet=500))
    wallet.escrow["m1"] = 500
    seat = await _to_doubling_turn(core)
    await core.submit("t1", P[seat], seat, "", 0, c.OfferDouble(seat))
    answering = asyncio.Event()
    capture = wallet.capture

    async def slow_capture(hold_key: str) -> None:
        await answering.wait()  # the wallet's database away until the take has its answer
        await capture(hold_key)

    monkeypatch.setattr(wallet, "capture", slow_capture)
    taken = await asyncio.wait_for(
        core.submit("t1", P[1 - seat], 1 - seat, "", 0, c.Take(1 - seat)), 5
    )
    assert kind(taken.events[0]) == "double_taken" and wallet.captured == []
    answering.set()
    await core.captures_done()
    assert wallet.captured == ["raise:m1:1:2"]


async def test_a_wagered_tournaments_double_needs_no_wallet(
    core: TableCore, wallet: FakeWallet
) -> None:
    """Issue 29: a wagered tournament's match has no bet (the buy-in was the stake): a double is
    offered and taken with the wallet away, and nothing is held or captured."""
    await core.create_match("t1", "m1", P, options("wagered", match_length=1, tournament=True))
    seat = await _to_doubling_turn(core)
    wallet.down = True
    await core.submit("t1", P[seat], seat, "", 0, c.OfferDouble(seat))
    taken = await core.submit("t1", P[1 - seat], 1 - seat, "", 0, c.Take(1 - seat))
    assert kind(taken.events[0]) == "double_taken"
    assert wallet.calls == [] and wallet.holds == {} and wallet.captured == []
    loaded, view = await core.view("t1", P[seat])
    assert view.boosts_left == 0 and loaded.state.match.options.tournament
    assert options_to_proto(loaded.state.match.options).tournament  # what clients are shown


async def test_the_commit_that_ends_a_match_writes_its_record_and_outcome(
    core: TableCore, wallet: FakeWallet
) -> None:
    """Issue 13 req. 4: the record (seed, rolls, boosts, final cube) is written by the same
    script as the end, once, as a typed record (issue 26); GetMatchOutcome reads it for the
    wallet's reconciler. The moves travel on the match's end event, not in the record."""
    state = OutcomeState
    await core.create_match("t1", "t1-1", P, options("wagered", match_length=1, bet=100))
    assert (await core.outcome("t1", "t1-1")).state == state.PLAYING
    assert (await core.outcome("t1", "t1-9")).state == state.UNKNOWN
    assert (await core.outcome("t9", "t9-1")).state == state.UNKNOWN
    loaded = await core.store.load("t1")
    assert loaded is not None
    seat = loaded.state.match.turn
    await core.submit("t1", P[seat], seat, "", 0, c.Boost(seat))
    m = (await load_table(core.store, "t1")).state.match
    play_ = m.play.plays[0]
    await core.submit("t1", P[seat], seat, "", 0, c.SubmitPlay(seat, play_.steps))
    other = 1 - seat
    ended = await core.submit("t1", P[other], other, "", 0, c.Resign(other))
    assert any(kind(ev) == "match_ended" for ev in ended.events)
    record = await core.store.get_record("t1", "t1-1")
    assert record is not None and record.winner == seat and record.cube == 1
    assert record.boosts == ((1, seat, 1),) and record.profile == "wagered"
    final = await load_table(core.store, "t1")
    assert record.seed_hex == final.state.secret.seed.hex()
    assert (
        record.rolls == final.state.match.rolls
        and record.end_reason == final.state.match.end_reason
    )
    assert record == MatchRecord.decode(record.encode())  # what Redis holds reads back whole
    end = next(ev for ev in ended.events if kind(ev) == "match_ended")
    kinds = [kind(mv) for mv in end.match_ended.moves]
    assert kinds[0] == "game_started" and "boost_applied" in kinds and "turn_ended" in kinds
    outcome = await core.outcome("t1", "t1-1")
    assert outcome.state == state.ENDED and outcome.winner_id == P[seat]
    assert list(outcome.applied_boosts) == [f"boost:t1-1:1:{seat}:1"]
    assert (await core.record("t1", "t1-1")).match_id == "t1-1"
    # The record gone first (its own expiry): the finished state still answers.
    store = core.store
    assert isinstance(store, MemoryTableStore)
    del store.records["t1:t1-1"]
    again = await core.outcome("t1", "t1-1")
    assert again.state == state.ENDED and again.winner_id == P[seat]


async def test_a_finished_tables_keys_expire_once_relayed_and_a_rematch_keeps_them(
    redis_core: TableCore,
) -> None:
    """Issue 13 req. 6: nothing of a finished match stays in Redis past the grace period, and
    nothing expires before its events are on Kafka."""
    from services.contracts.redis_keys import commands_key, record_key, table_key
    from services.table.adapters.redis_store import FINISHED_TTL_S
    from services.table.relay import EventRelay

    core = redis_core
    store = cast(TableStore, core.store)
    redis = store.redis
    keys = [table_key("t1"), stream_key("t1"), commands_key("t1")]
    await core.create_match("t1", "t1-1", P, options("wagered", match_length=1, bet=100))
    loaded = await core.store.load("t1")
    assert loaded is not None
    seat = loaded.state.match.turn
    await core.submit("t1", P[seat], seat, "cmd-1", 0, c.Resign(seat))
    assert [await redis.ttl(k) for k in keys] == [-1, -1, -1]  # not on Kafka yet: kept
    assert FINISHED_TTL_S < await redis.ttl(record_key("t1", "t1-1")) <= 86_400
    producer = FakePublisher()
    relay = EventRelay(store, producer)
    assert await relay.run_once() > 0
    ttls = [await redis.ttl(k) for k in [*keys, record_key("t1", "t1-1")]]
    assert all(0 < t <= FINISHED_TTL_S for t in ttls), ttls
    rematch = options("wagered", match_length=1, bet=100)
    await core.create_match("t1", "t1-2", P, rematch)
    assert [await redis.ttl(k) for k in keys] == [-1, -1, -1]
