"""Virtual shards (issue 14): every shard has one owner among the live replicas, only a leaving
replica's shards move, and when a replica dies its shards pass to the others with no deadline
lost or doubled (real Valkey)."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis_asyncio

from services.contracts.redis_keys import clocks_key, stream_key, table_key, update_channel
from services.contracts.shards import VIRTUAL_SHARDS, shard_of
from services.table.adapters.redis_store import TableStore
from services.table.clock import ClockWorker
from services.table.relay import EventRelay
from services.table.shard_leases import MEMBERS, ShardLeases, assign
from services.table.table_core import TableCore
from tests.helpers import Valkey, assert_no_turn_timed_out_twice, stored_events
from tests.table.driver import deal, options, redis_store
from tests.table.fakes import FakePublisher, FakeWallet

P = ["alice", "bob"]


def test_every_shard_has_exactly_one_owner_and_only_a_leavers_shards_move() -> None:
    three = assign(["a", "b", "c"])
    assert sorted(s for owned in three.values() for s in owned) == list(range(VIRTUAL_SHARDS))
    assert all(250 < len(owned) < 430 for owned in three.values())  # spread, not lumped
    two = assign(["a", "c"])
    for member in ("a", "c"):
        assert set(three[member]) <= set(two[member])  # survivors keep what they had
    assert set(two["a"]) | set(two["c"]) == set(range(VIRTUAL_SHARDS))
    assert assign(["c", "b", "a"]) == three  # the order members are listed in is no matter


def test_a_tables_keys_share_its_shards_hash_tag() -> None:
    tag = "{s" + str(shard_of("table-7")) + "}"
    for key in (table_key("table-7"), stream_key("table-7"), update_channel("table-7")):
        assert key[key.index("{") : key.index("}") + 1] == tag
    assert clocks_key(shard_of("table-7")).endswith(tag)


@pytest.mark.integration
async def test_leases_split_the_shards_and_a_dead_replicas_pass_to_the_living(
    redis: redis_asyncio.Redis,
) -> None:
    replicas = [ShardLeases(redis, f"r{i}", ttl_ms=600) for i in range(3)]
    for r in replicas:
        await r.renew()
    for r in replicas:
        await r.renew()  # each now sees all three
    owned = [set(r.owned()) for r in replicas]
    assert sum(len(o) for o in owned) == VIRTUAL_SHARDS
    assert set().union(*owned) == set(range(VIRTUAL_SHARDS))
    # r2 dies (no goodbye): once its lease runs out the others take its shards, keeping theirs.
    await asyncio.sleep(0.7)
    for r in replicas[:2]:
        await r.renew()
    assert set(replicas[0].owned()) | set(replicas[1].owned()) == set(range(VIRTUAL_SHARDS))
    assert owned[0] <= set(replicas[0].owned()) and owned[1] <= set(replicas[1].owned())
    assert len(await redis.zrange(MEMBERS, 0, -1)) == 2


async def _kill(tasks: list[asyncio.Task[None]]) -> None:
    """Stop tasks dead: no goodbye, the lease left to run out by itself. Cancelled until done:
    Python 3.11's wait_for can swallow a cancellation that lands as its wait ends."""
    while not all(t.done() for t in tasks):
        for task in tasks:
            task.cancel()
        await asyncio.sleep(0.01)


@pytest.mark.integration
async def test_a_replica_killed_mid_run_loses_no_deadline_and_doubles_none(
    valkey: Valkey, redis: redis_asyncio.Redis
) -> None:
    """Three replicas, each with its clock worker on its own shards; one is killed (its tasks
    stop dead, its lease left to run out) while forty matches time out turn after turn."""
    clients = [valkey.client() for _ in range(4)]
    cores = [TableCore(TableStore(cl), FakeWallet(), clock_scale=0.002) for cl in clients]
    stops = [asyncio.Event() for _ in range(3)]
    leases = [ShardLeases(cl, f"r{i}", ttl_ms=600) for i, cl in enumerate(clients[1:])]
    for lease in leases:
        await lease.renew()
    tasks = [
        [
            asyncio.create_task(lease.run(stop)),
            asyncio.create_task(ClockWorker(redis_store(core), core, lease).run(stop)),
        ]
        for lease, core, stop in zip(leases, cores[1:], stops, strict=True)
    ]
    tables = [f"k{i}" for i in range(40)]
    try:
        for t in tables:
            await deal(cores[0], t, f"m-{t}", P, options("wagered", match_length=1, bet=100))
        await asyncio.sleep(0.5)
        victim = set(leases[2].owned())
        orphans = [t for t in tables if shard_of(t) in victim]
        await _kill(tasks[2])
        left = [await cores[0].store.load(t) for t in orphans]
        assert any(ld and not ld.state.match.finished for ld in left)  # the others must fire them
        finished: list[str] = []
        for _ in range(600):
            loaded = [await cores[0].store.load(t) for t in tables]
            finished = [
                t for t, ld in zip(tables, loaded, strict=True) if ld and ld.state.match.finished
            ]
            if len(finished) == len(tables):
                break
            await asyncio.sleep(0.05)
        assert sorted(finished) == sorted(tables)  # none lost, its shards' included
        assert set(leases[0].owned()) | set(leases[1].owned()) == set(range(VIRTUAL_SHARDS))
    finally:
        for stop in stops:
            stop.set()
        await asyncio.gather(*(t for pair in tasks for t in pair), return_exceptions=True)
        for cl in clients:
            await cl.aclose()
    for t in tables:  # never doubled: one timeout per turn at most
        assert_no_turn_timed_out_twice(t, await stored_events(cores[0].store, t))


@pytest.mark.integration
async def test_a_relay_sends_its_own_commits_at_once_and_sweeps_up_the_dead_replicas(
    redis: redis_asyncio.Redis,
) -> None:
    """The core tells its relay what it committed (no sweep needed); a table committed by a
    replica that died before relaying is found by the sweep of its shard's owner."""
    producer = FakePublisher()
    relay = EventRelay(TableStore(redis), producer)
    here = TableCore(TableStore(redis), FakeWallet(), on_commit=relay.committed)
    dead = TableCore(TableStore(redis), FakeWallet())
    await here.create_match("mine", "m-mine", P, options("casual", match_length=1))
    await dead.create_match("theirs", "m-theirs", P, options("casual", match_length=1))
    assert await relay.run_once(sweep=False) > 0
    assert {key for key, _ in producer.sent} == {"mine"}
    assert await relay.run_once(sweep=True) > 0
    assert {key for key, _ in producer.sent} == {"mine", "theirs"}
    assert await redis_store(here).pending_tables() == []
