"""Two replicas (two cores with their own state caches) on one real Valkey: a cached state may be
stale but is never served as truth; command ids are scoped to their seat (RULES I-34); each
commit is one script call publishing the events with both seats' views."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis_asyncio

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2
from engine import commands as c
from engine.view import PlayerView
from services.common.errors import ServiceError
from services.contracts.redis_keys import update_channel
from services.table.adapters.redis_store import TableStore
from services.table.table_core import TableCore
from tests.table.driver import options, redis_store
from tests.table.fakes import FakeWallet

pytestmark = pytest.mark.integration
P = ["alice", "bob"]


def _core(redis: redis_asyncio.Redis) -> TableCore:
    return TableCore(TableStore(redis), FakeWallet(alice=10_000, bob=10_000), clock_scale=0.01)


async def _on_turn(core: TableCore, table_id: str) -> int:
    loaded, _ = await core.view(table_id, P[0])
    return loaded.state.match.turn


def _one_die_step(view: PlayerView) -> tuple[int, int]:
    """A lit step that uses one die only (the turn goes on after it)."""
    assert view.dice is not None
    return next(
        (frm, to)
        for frm, dests in view.lit.items()
        for to in dests
        if to > 0 and frm - to in view.dice
    )


async def test_i34_command_ids_are_scoped_to_the_seat(redis: redis_asyncio.Redis) -> None:
    core = _core(redis)
    await core.create_match("t1", "m1", P, options("wagered", match_length=1, bet=100))
    seat = await _on_turn(core, "t1")
    other = 1 - seat
    _, mine = await core.view("t1", P[seat])
    # Each seat counts its ids from 1: neither seat's "1" is a duplicate of the other's.
    first = await core.submit("t1", P[other], other, "1", 0, c.SetAutoRoll(other, True))
    assert not first.duplicate
    frm, to = _one_die_step(mine)
    second = await core.submit("t1", P[seat], seat, "1", 0, c.Move(seat, frm, to))
    assert not second.duplicate and second.seq > first.seq  # applied, not "already done"
    again = await core.submit("t1", P[seat], seat, "1", 0, c.Move(seat, frm, to))
    assert again.duplicate and again.seq == second.seq  # the same seat's retry: once
    assert [e.seq for e in again.events] == [e.seq for e in second.events]


async def test_a_stale_cache_is_never_served(redis: redis_asyncio.Redis) -> None:
    a, b = _core(redis), _core(redis)
    await a.create_match("t1", "m1", P, options("casual", match_length=1))
    seat = await _on_turn(a, "t1")
    _, view = await b.view("t1", P[seat])  # b caches the table at this seq
    frm, to = _one_die_step(view)
    moved = await a.submit("t1", P[seat], seat, "a1", 0, c.Move(seat, frm, to))
    # b's cache is one commit behind: the same step judged on it would look legal again.
    cached = b.cache.get("t1")
    assert cached is not None and cached.seq < moved.seq
    # On b's stale cache the undo has nothing to take back; on the real state it has.
    undone = await b.submit("t1", P[seat], seat, "b1", 0, c.Undo(seat))
    assert undone.seq > moved.seq and undone.events[0].WhichOneof("body") == "steps_undone"
    with pytest.raises(ServiceError) as stale:  # a client that saw the old seq is told so
        await b.submit("t1", P[seat], seat, "b2", moved.seq - 1, c.Undo(seat))
    assert stale.value.code == "STALE_SEQ"


async def test_racing_replicas_commit_each_transition_once(redis: redis_asyncio.Redis) -> None:
    a, b = _core(redis), _core(redis)
    await a.create_match("t1", "m1", P, options("wagered", match_length=1, bet=100))
    seat = 1 - await _on_turn(a, "t1")
    await b.view("t1", P[seat])  # both replicas cache the same seq
    results = await asyncio.gather(
        a.submit("t1", P[seat], seat, "x", 0, c.SetAutoRoll(seat, True)),
        b.submit("t1", P[seat], seat, "y", 0, c.SetAutoRoll(seat, False)),
    )
    assert results[0].seq != results[1].seq  # one committed first, the other after a re-read
    loaded = await a.store.load("t1")
    assert loaded is not None and loaded.seq == max(r.seq for r in results)


async def test_each_commit_publishes_events_and_both_views(redis: redis_asyncio.Redis) -> None:
    core = _core(redis)
    pubsub = redis.pubsub()
    await pubsub.subscribe(update_channel("t1"))
    await core.create_match("t1", "m1", P, options("scored", match_length=1))
    updates = []
    for _ in range(50):
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if message:
            update = table_pb2.TableUpdate()
            update.ParseFromString(message["data"])
            updates.append(update)
            break
    await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # redis-py leaves it unannotated
    assert updates, "no update published"
    first = updates[0]
    assert [v.seat for v in first.views] == [0, 1] and first.views[0].seq == first.seq
    assert first.events[-1].seq == first.seq and first.events[0].seq == 1
    assert first.views[0].phase != events_pb2.PHASE_UNSPECIFIED
    assert not any("seed" in f.name for f, _ in first.views[0].ListFields())


async def test_scripts_reload_after_redis_forgets_them(redis: redis_asyncio.Redis) -> None:
    """EVALSHA is the hot path; after a SCRIPT FLUSH (or a restart) the scripts load again."""
    core = _core(redis)
    await core.create_match("t1", "m1", P, options("casual", match_length=1))
    await redis.script_flush()
    seat = await _on_turn(core, "t1")
    _, view = await core.view("t1", P[seat])
    frm, to = _one_die_step(view)
    moved = await core.submit("t1", P[seat], seat, "1", 0, c.Move(seat, frm, to))
    await redis.script_flush()
    await redis_store(core).relay_ack_many({"t1": moved.seq})
    assert await redis_store(core).relayed("t1") == moved.seq
    assert await redis_store(core).pending_tables() == []  # caught up: unmarked


def test_a_lost_lease_drops_the_cached_states_of_the_shards_it_covered() -> None:
    """Issue 25: when a replica's shards change it forgets the tables of every shard it no
    longer owns (their states would only go stale there) and keeps the rest."""
    from services.contracts.shards import shard_of
    from services.table.ports import Loaded, TableMeta
    from services.table.table_core import StateCache

    cache = StateCache(16)
    ids = [f"k{i}" for i in range(8)]
    for table_id in ids:
        meta = TableMeta(table_id=table_id, match_id="m", player_ids=["a", "b"])
        cache.put(table_id, Loaded(1, None, meta, 0))  # type: ignore[arg-type]
    kept = {shard_of(t) for t in ids[:3]}
    cache.keep_shards(kept)
    left = [t for t in ids if cache.get(t) is not None]
    assert left == [t for t in ids if shard_of(t) in kept]
    assert 3 <= len(left) < len(ids)  # these ids' shards differ: some went, the kept stayed
