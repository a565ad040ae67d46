"""The relay's confirmation checks only the shards that may hold unconfirmed tables, with a
full check of every owned shard every CONFIRM_ALL_S and whenever the owned shards change (the
store and the broker are fakes; the real ones: tests/platform/test_event_log.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from bg.events.v1 import events_pb2
from services.common.embedded_generations import confirmed
from services.common.embedded_log import Placed
from services.common.log_port import KEPT, Outgoing, Receipt, Unsent, Verdict
from services.contracts.shards import shard_of
from services.table import relay as relay_module
from services.table.adapters.redis_store import RelayState
from services.table.ports import Entry
from services.table.relay import EventRelay

INCARNATION = "inc-1"


class Store:
    """Unconfirmed tables by id; records which shards each check asked for."""

    def __init__(self) -> None:
        self.waiting: dict[str, RelayState] = {}
        self.asked: list[set[int]] = []
        self.confirmed: dict[str, int] = {}

    async def unconfirmed(self, shards: Iterable[int]) -> tuple[dict[str, RelayState], int | None]:
        asked = set(shards)
        self.asked.append(asked)
        found = {t: s for t, s in self.waiting.items() if shard_of(t) in asked}
        return found, (0 if found else None)

    async def confirm_many(self, upto: dict[str, int]) -> None:
        self.confirmed.update(upto)
        for t in upto:
            self.waiting.pop(t)


class Leases:
    def __init__(self, shards: list[int]) -> None:
        self.shards = shards

    def owned(self) -> list[int]:
        return self.shards


class Broker:
    """The event log as a relay on a broker that may forget sees it: every receipt of the
    current incarnation is read once every group's offset (`read_up_to`) is past it."""

    def __init__(self, read_up_to: dict[str, int | None]) -> None:
        self.read_up_to = read_up_to

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        raise AssertionError("these tests only confirm")

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        placed = [Placed.of(r) for r in receipts]
        return [
            Verdict.LOST
            if p is None or p.incarnation != INCARNATION
            else Verdict.READ
            if confirmed(self.read_up_to, p.offset)
            else Verdict.WAITING
            for p in placed
        ]

    async def close(self) -> None:
        return None


def _at(gen: int, offset: int) -> Receipt:
    return Placed(gen, 0, offset, INCARNATION).receipt()


def _table_in(shard: int) -> str:
    return next(t for i in range(100_000) if shard_of(t := f"t{i}") == shard)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    return now


async def test_between_full_checks_only_the_shards_with_unconfirmed_tables_are_read(
    clock: list[float],
) -> None:
    store = Store()
    owned = list(range(0, 512))
    groups: dict[str, int | None] = {"leaderboard": 10, "wallet": 10}
    relay = EventRelay(store, Broker(groups), leases=Leases(owned))  # type: ignore[arg-type]
    late = _table_in(7)
    store.waiting[late] = RelayState(relayed=5, receipt=_at(0, 20))

    assert await relay.confirm_once() == 0  # the first check reads every owned shard
    assert store.asked[-1] == set(owned)
    clock[0] += 1
    assert await relay.confirm_once() == 0  # still unread: its shard alone is read again
    assert store.asked[-1] == {7}

    groups["wallet"] = groups["leaderboard"] = 21  # every group is past its record now
    clock[0] += 1
    assert await relay.confirm_once() == 1
    assert store.confirmed == {late: 5}
    clock[0] += 1
    await relay.confirm_once()  # the shard is read once more, found empty and let go
    assert store.asked[-1] == {7}
    clock[0] += 1
    await relay.confirm_once()
    assert store.asked[-1] == set()

    # A table another replica left unconfirmed is found by the next full check.
    other = _table_in(300)
    store.waiting[other] = RelayState(relayed=9, receipt=_at(0, 3))
    clock[0] += relay_module.CONFIRM_ALL_S
    assert await relay.confirm_once() == 1
    assert store.asked[-1] == set(owned)
    assert store.confirmed[other] == 9


async def test_a_change_of_owned_shards_reads_them_all(clock: list[float]) -> None:
    store = Store()
    leases = Leases([1, 2, 3])
    relay = EventRelay(store, Broker({}), leases=leases)  # type: ignore[arg-type]
    await relay.confirm_once()
    clock[0] += 1
    await relay.confirm_once()
    assert store.asked == [{1, 2, 3}, set()]
    leases.shards = [1, 2, 3, 4]  # a shard came from a replica that may have left it marked
    clock[0] += 1
    await relay.confirm_once()
    assert store.asked[-1] == {1, 2, 3, 4}


class HoldingStore:
    """One table with a record placed two generations back and a new commit waiting; counts
    the reads of its stream."""

    def __init__(self) -> None:
        self.state = RelayState(relayed=4, receipt=_at(7, 3))
        self.reads = 0
        self.acked: dict[str, int] = {}
        self.kept: dict[str, Receipt] = {}  # receipts left to confirm
        self.released = 0

    async def lease_for_relay(self, tables: list[str], token: str, ttl: int) -> dict[str, Any]:
        return {t: self.state for t in tables}

    async def events_after(self, pointers: dict[str, int]) -> dict[str, list[Entry]]:
        self.reads += 1
        event = events_pb2.TableEvent(table_id="t1", seq=5).SerializeToString()
        return {t: [Entry(5, event, "turn_started", 1)] for t in pointers}

    async def relay_ack_many(
        self, upto: dict[str, int], where: Any, at_ms: int, token: str
    ) -> None:
        """Pointers that moved are kept; each call ends the pass's leases."""
        self.acked.update({t: n for t, n in upto.items() if n > self.state.relayed})
        self.kept.update(where)
        self.released += len(upto)

    async def release_relay(self, tables: list[str], token: str) -> None:
        raise AssertionError("the acknowledgement ends the leases")


class Holding(Broker):
    """Holds a key whose last record is unread; sends once it is read."""

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        out: list[Receipt | Unsent] = []
        for r in records:
            last = Placed.of(r.follows)
            unread = last is not None and not confirmed(self.read_up_to, last.offset)
            out.append(Unsent.WAIT if unread else _at(9, 0))
        return out


async def test_a_held_table_is_checked_not_read_again_until_its_records_are_read() -> None:
    """With a group generations behind, every table it has not read is held: each pass checks
    where their last records went and reads no stream until they are read (a stream read per
    held table per pass loaded Redis just when a consumer lagged)."""
    store = HoldingStore()
    broker = Holding({"leaderboard": 2, "wallet": 2})  # behind offset 3
    relay = EventRelay(store, broker, leases=Leases([0]))  # type: ignore[arg-type]
    for _ in range(3):
        relay.committed("t1")
        assert await relay.run_once(sweep=False) == 0
    assert store.reads == 1 and store.acked == {}  # read once, held since, nothing acked
    broker.read_up_to.update(leaderboard=4, wallet=4)  # the groups caught up
    relay.committed("t1")
    assert await relay.run_once(sweep=False) == 1
    assert store.reads == 2 and store.acked == {"t1": 5}
    assert store.kept == {"t1": _at(9, 0)}  # its new last record's, to confirm
    assert store.released == 4  # every pass's lease ended with its acknowledgement


class Keeping(Broker):
    """A log that keeps what it acknowledged (Kafka's): every receipt KEPT, every check READ."""

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        return [KEPT] * len(records)

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        return [Verdict.READ] * len(receipts)


async def test_the_same_relay_on_a_log_that_keeps_what_it_acknowledged_keeps_nothing_to_confirm(
    clock: list[float],
) -> None:
    """Issue 62, item 1: no mode in the relay. KEPT receipts leave no table unconfirmed; a table
    an earlier log left unconfirmed (its receipt unreadable now) is confirmed by the next check,
    not relayed again, since this log answers READ."""
    store = HoldingStore()
    store.state = RelayState(relayed=4)
    relay = EventRelay(store, Keeping({}), leases=Leases([0]))  # type: ignore[arg-type]
    relay.committed("t1")
    assert await relay.run_once(sweep=False) == 1
    assert store.acked == {"t1": 5} and store.kept == {}

    waiting = Store()
    waiting.waiting[_table_in(3)] = RelayState(relayed=8, receipt=_at(2, 1))
    checker = EventRelay(waiting, Keeping({}), leases=Leases([3]))  # type: ignore[arg-type]
    assert await checker.confirm_once() == 1
    assert waiting.confirmed == {_table_in(3): 8}


class CountingLeases(Leases):
    """Counts the passes (each asks for the owned shards once)."""

    asked = 0

    def owned(self) -> list[int]:
        self.asked += 1
        return super().owned()


async def test_an_idle_relay_sleeps_until_a_commit_here_wakes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With nothing committed, the relay waits for the core's word (here with an hour's bound,
    which no step below waits for) instead of passing 20 times a second over nothing."""
    monkeypatch.setattr(relay_module, "IDLE_S", 3600.0)
    store = HoldingStore()
    store.state = RelayState(relayed=4)  # nowhere yet: sent at once
    leases = CountingLeases([])
    relay = EventRelay(store, Holding({}), leases=leases, sweep_s=3600.0)  # type: ignore[arg-type]
    relay._swept = relay._confirmed = time.monotonic()  # as after a first pass
    stop = asyncio.Event()
    running = asyncio.create_task(relay.run(stop))
    try:
        await asyncio.sleep(0.3)  # six 50 ms intervals: one pass, then asleep
        assert leases.asked <= 1 and store.reads == 0  # the old relay: a pass every 50 ms
        relay.committed("t1")
        for _ in range(100):  # bounded: 10 s
            if store.acked:
                break
            await asyncio.sleep(0.1)
        assert store.acked == {"t1": 5} and store.reads == 1
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)  # a stop ends the idle wait too
