"""The relay sends a replica's own commits from memory, reading back no stream it just wrote,
and reads the stream when another replica committed in between: every event goes once, in seq
order, and each pass's leases end with its acknowledgement (real Valkey, a fake event log)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from bg.events.v1 import events_pb2
from services.common.clock import now_ms
from services.common.log_port import Outgoing, Receipt, Unsent
from services.common.metrics import ServiceMetrics
from services.contracts.redis_keys import table_key
from services.table import relay as relay_module
from services.table.adapters.redis_store import TableStore
from services.table.metrics import TableMetrics
from services.table.ports import Entry
from services.table.relay import EventRelay
from services.table.table_core import TableCore
from tests.table.driver import deal, options
from tests.table.fakes import FakePublisher, FakeWallet

P = ["alice", "bob"]


class CountingStore(TableStore):
    """Counts the tables whose streams a relay reads."""

    reads = 0

    async def events_after(self, pointers: dict[str, int]) -> dict[str, list[Entry]]:
        self.reads += len(pointers)
        return await super().events_after(pointers)


def _replica(redis: Any, wallet: FakeWallet) -> tuple[TableCore, EventRelay, CountingStore]:
    store = CountingStore(redis)
    relay = EventRelay(store, FakePublisher())
    core = TableCore(store, wallet, clock_scale=0.01, on_commit=relay.committed)
    return core, relay, store


def _seqs(*relays: EventRelay) -> list[int]:
    out = []
    for relay in relays:
        for _key, data in relay.publisher.sent:  # type: ignore[attr-defined]
            out.append(events_pb2.TableEvent.FromString(data).seq)
    return out


async def test_a_replicas_own_commits_leave_from_memory(redis: Any, wallet: FakeWallet) -> None:
    core, relay, store = _replica(redis, wallet)
    await deal(core, "t1", "t1-1", P, options("casual"))
    assert await relay.run_once(sweep=False) > 0
    await core.presence("t1", P[0], connected=False)
    await core.presence("t1", P[1], connected=False)
    assert await relay.run_once(sweep=False) > 0
    seq = (await store.load("t1")).seq  # type: ignore[union-attr]
    assert _seqs(relay) == list(range(1, seq + 1))  # each once, in order
    assert store.reads == 0  # not one stream read back
    assert await store.relayed("t1") == seq
    assert await redis.keys("relay:lock:*") == []  # the acknowledgement ended the leases
    assert relay._fresh == {}  # nothing kept once sent


async def test_a_commit_by_another_replica_in_between_is_read_from_the_stream(
    redis: Any, wallet: FakeWallet
) -> None:
    """Replica A's kept events do not follow the pointer (B committed in between): A reads the
    stream and sends B's event before its own; B then finds nothing left to send."""
    core_a, relay_a, store_a = _replica(redis, wallet)
    core_b, relay_b, store_b = _replica(redis, wallet)
    await deal(core_a, "t1", "t1-1", P, options("casual"))
    await relay_a.run_once(sweep=False)
    await core_b.presence("t1", P[0], connected=False)  # B's commit, not yet relayed
    await core_a.presence("t1", P[1], connected=False)
    assert await relay_a.run_once(sweep=False) == 2
    assert store_a.reads == 1
    assert await relay_b.run_once(sweep=False) == 0  # its event went with A's pass
    seq = (await store_a.load("t1")).seq  # type: ignore[union-attr]
    assert _seqs(relay_a, relay_b) == list(range(1, seq + 1))
    assert await store_a.relayed("t1") == seq
    assert relay_a._fresh == {} and relay_b._fresh == {}
    # B's next commit follows the pointer again: from memory.
    await core_b.presence("t1", P[0], connected=True)
    assert await relay_b.run_once(sweep=False) == 1
    assert store_b.reads == 1 and _seqs(relay_b) == [seq + 1]


class Forgetting(FakePublisher):
    """A log that lost the table's last records: every publish comes back RESEND."""

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        return [Unsent.RESEND] * len(records)


async def test_a_lost_table_goes_again_from_what_every_group_read(
    redis: Any, wallet: FakeWallet
) -> None:
    """The pass that finds the log lost a table's records puts its pointer back to `consumed`; the
    same pass's acknowledgement, which ends its lease, leaves that pointer where it is."""
    core, relay, store = _replica(redis, wallet)
    await deal(core, "t1", "t1-1", P, options("casual"))
    await relay.run_once(sweep=False)
    await redis.hset(table_key("t1"), "consumed", 2)  # every group read up to seq 2
    await core.presence("t1", P[0], connected=False)
    relay.publisher = Forgetting()
    assert await relay.run_once(sweep=False) == 0
    assert await store.relayed("t1") == 2  # relayed again from there, next pass
    assert await redis.keys("relay:lock:*") == []
    relay.publisher = FakePublisher()
    assert await relay.run_once(sweep=False) > 0
    seq = (await store.load("t1")).seq  # type: ignore[union-attr]
    assert _seqs(relay)[0] == 3 and _seqs(relay)[-1] == seq


def test_the_events_kept_are_bounded_in_all(monkeypatch: Any) -> None:
    """Past FRESH_TOTAL_MAX (Kafka away while every table plays) a table's events are not kept:
    its pass reads its stream; sending frees what was kept."""
    monkeypatch.setattr(relay_module, "FRESH_TOTAL_MAX", 3)
    relay = EventRelay(None, FakePublisher())  # type: ignore[arg-type]

    def events(first: int, n: int) -> list[Entry]:
        return [Entry(first + i, b"e", "dice_rolled", n if i == 0 else 0) for i in range(n)]

    relay.committed("a", events(1, 2))
    relay.committed("b", events(1, 2))  # would make 4
    assert set(relay._fresh) == {"a"} and relay._kept == 2
    assert relay._from_memory({"a": 0, "b": 0}) == {"a": events(1, 2)}
    relay.committed("a", events(4, 1))  # a gap (seq 3 another replica's): only the new one
    assert [e.seq for e in relay._fresh["a"]] == [4] and relay._kept == 1
    relay._sent({"a": 4})
    assert relay._fresh == {} and relay._kept == 0
    assert relay._committed == {"a", "b"}  # both still go in the next pass


class StalledPublisher(FakePublisher):
    """A broker that takes records and never answers, until `answers` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.answers = asyncio.Event()
        self.waiting = asyncio.Event()

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        self.waiting.set()
        await self.answers.wait()
        return await super().publish(records, at_ms)


async def test_the_lag_shows_an_outage_while_a_pass_waits_on_the_broker(
    redis: Any, wallet: FakeWallet
) -> None:
    """Issue 58, item 5: the gauge was set by the relay's passes, which wait on the broker, and
    stayed at 0-0.015 s through a 10 s broker isolation. Read on a loop of its own from the
    pending sets, it is the age of the oldest unaccepted event while the pass is stuck (the
    relay's clock 42 s on from the commits: no sleeping), and 0 once the broker answers."""
    store = TableStore(redis)
    publisher = StalledPublisher()
    metrics = TableMetrics(ServiceMetrics("table"))
    relay = EventRelay(
        store, publisher, metrics, interval_s=0.01, now=lambda: now_ms() + 42_000, sweep_s=0
    )
    core = TableCore(store, wallet, clock_scale=0.01, on_commit=relay.committed)
    await deal(core, "t1", "t1-1", P, options("casual"))
    stop = asyncio.Event()
    passes = asyncio.create_task(relay.run(stop))
    lag = asyncio.create_task(relay.watch_lag(stop, every_s=0.01))
    try:
        await asyncio.wait_for(publisher.waiting.wait(), 10)
        seen = await _gauge_until(metrics, lambda v: v > 0)
        assert 41 <= seen <= 50  # the commit's age by the relay's clock, the pass still stuck
        publisher.answers.set()
        assert await _gauge_until(metrics, lambda v: v == 0) == 0  # accepted: nothing waits
        assert await store.pending_tables(None, 1) == []
    finally:
        stop.set()
        await asyncio.gather(passes, lag)


async def _gauge_until(metrics: TableMetrics, ok: Callable[[float], bool]) -> float:
    for _ in range(1000):
        value = metrics.relay_lag._value.get()
        if ok(value):
            return float(value)
        await asyncio.sleep(0.01)
    raise AssertionError(f"the relay lag stayed at {metrics.relay_lag._value.get()}")
