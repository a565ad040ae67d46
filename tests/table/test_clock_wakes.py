"""Who hears of a commit's sooner deadline: the clock worker of the committing replica, directly,
when it looks after the table's shard (no wake-up published for every replica to read); every
worker, by the wake-up channel, when another replica looks after it, when the shard's lease
moved while the commit ran, and for the shards a replica hands over (real Valkey for the
channel; the in-memory store for the lease race)."""

from __future__ import annotations

from typing import Any

from services.common.clock import now_ms
from services.common.connections import reply_text
from services.contracts.redis_keys import WAKE_CHANNEL
from services.contracts.shards import VIRTUAL_SHARDS, shard_of
from services.table.adapters.redis_store import TableStore
from services.table.clock import ClockWorker
from services.table.shard_leases import AllShards
from services.table.table_core import TableCore
from tests.table.driver import deal, options
from tests.table.fakes import FakeWallet
from tests.table.memory_store import MemoryTableStore

P = ["alice", "bob"]


class Shards:
    """Leases that look after the given shards only."""

    def __init__(self, shards: set[int]) -> None:
        self.shards = shards

    def owned(self) -> list[int]:
        return sorted(self.shards)

    def owns(self, shard: int) -> bool:
        return shard in self.shards


async def _heard(pubsub: Any) -> list[str]:
    out = []
    while (
        message := await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.3)
    ) is not None:
        out.append(reply_text(message["data"]))
    return out


async def test_the_owning_replica_tells_its_worker_and_publishes_nothing(
    redis: Any, wallet: FakeWallet
) -> None:
    store = TableStore(redis)
    core = TableCore(store, wallet, clock_scale=0.01)
    worker = ClockWorker(store, core, AllShards())
    core.local_clock = worker
    pubsub = redis.pubsub()
    await pubsub.subscribe(WAKE_CHANNEL)
    await pubsub.get_message(timeout=1.0)  # the subscription's confirmation
    try:
        await deal(core, "t1", "t1-1", P, options("casual"))
        assert await _heard(pubsub) == []
        assert shard_of("t1") in worker._earliest  # told directly
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]


async def test_a_shard_another_replica_looks_after_is_woken_by_the_channel(
    redis: Any, wallet: FakeWallet
) -> None:
    store = TableStore(redis)
    core = TableCore(store, wallet, clock_scale=0.01)
    worker = ClockWorker(store, core, Shards(set()))  # type: ignore[arg-type]  # this replica looks after no shard
    core.local_clock = worker
    pubsub = redis.pubsub()
    await pubsub.subscribe(WAKE_CHANNEL)
    await pubsub.get_message(timeout=1.0)
    try:
        await deal(core, "t1", "t1-1", P, options("casual"))
        heard = await _heard(pubsub)
        assert heard and heard[0].startswith(f"{shard_of('t1')}:")
        assert worker._earliest == {}
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]


class LeaseLostMidCommit:
    """Looks after every shard until the commit is under way, then none (a renewal between)."""

    def __init__(self) -> None:
        self.asked = 0
        self.told: list[tuple[int, int]] = []

    def looks_after(self, shard: int) -> bool:
        self.asked += 1
        return self.asked == 1

    def sooner(self, shard: int, at_ms: int) -> None:
        self.told.append((shard, at_ms))


async def test_a_lease_lost_while_the_commit_ran_publishes_the_wake_up(
    wallet: FakeWallet,
) -> None:
    store = MemoryTableStore()
    core = TableCore(store, wallet, clock_scale=0.01)
    clock = LeaseLostMidCommit()
    core.local_clock = clock
    await core.create_match("t1", "t1-1", P, options("casual"))
    assert clock.told == []
    assert store.wakes == [(shard_of("t1"), store.deadlines["t1"])]


async def test_a_replica_handing_shards_over_publishes_their_earliest_deadlines(
    redis: Any, wallet: FakeWallet
) -> None:
    store = TableStore(redis)
    core = TableCore(store, wallet, clock_scale=0.01)
    leases = Shards(set(range(VIRTUAL_SHARDS)))
    worker = ClockWorker(store, core, leases)  # type: ignore[arg-type]
    at = now_ms() + 60_000
    worker.sooner(3, at)
    worker.sooner(4, at + 1)
    worker.sooner(VIRTUAL_SHARDS + 7, at)  # a shard it never looked after (another's wake-up)
    pubsub = redis.pubsub()
    await pubsub.subscribe(WAKE_CHANNEL)
    await pubsub.get_message(timeout=1.0)
    try:
        leases.shards.discard(3)
        worker.shards_changed(leases.owned())
        assert await _heard(pubsub) == [f"3:{at}"]  # not the shard it keeps, nor another's
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]
