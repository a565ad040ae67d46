"""Relays every table's Redis stream to the Kafka topic `table-events`, at least once: one record
per commit (services/contracts/event_records.py), keyed by table id.

Tables with unrelayed events sit in their shard's `relay:{s<n>}` set. Each pass takes the tables
this replica committed since the last pass (the core tells it: the events leave at once) and,
every SWEEP_S, every pending table of the shards it looks after (the tables other replicas
committed and died before relaying). It takes a short lease on each table (so one relay at a
time publishes a table, in order), reads the streams after each table's `relayed` pointer,
publishes in order keyed by table id, waits for Kafka's acknowledgements, then moves the
pointers; every step is one pipelined round trip for the whole batch. A crash after publishing
and before the pointer moves re-publishes the same events, in the same order: consumers dedupe on
(table_id, seq).

On a broker that may forget (services/common/event_log.py, `embedded` mode) the records go to the
topic's current generation, except that a table whose last record is in the previous generation
and not yet read by every group stays there (so each group reads a table's records in order
across the switch); a table two generations behind and still unread waits. Each table remembers
where its last record went and stays unconfirmed until every group has committed past it; every
CONFIRM_S the unconfirmed tables are checked: read ones are confirmed (`consumed`), and those the
broker has forgotten (another incarnation) are relayed again from `consumed`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any

from aiokafka import TopicPartition

from services.common.backoff import Backoff, pause
from services.common.clock import now_ms
from services.common.event_log import Forgetful, confirmed
from services.contracts.event_records import commit_record
from services.contracts.shards import shard_of
from services.contracts.topics import TABLE_EVENTS
from services.table.adapters.redis_store import Entry, RelayState, TableStore
from services.table.metrics import TableMetrics
from services.table.shard_leases import AllShards, ShardLeases

log = logging.getLogger("bg.table.relay")
LEASE_MS = 10_000
BACKLOG = 1000  # events in one pass that mean "behind": go again without waiting
# Look at every owned shard's pending tables this often: only tables whose committing replica
# died before relaying them (or whose pass failed) need it; the rest leave at once.
SWEEP_S = 5.0
PER_SHARD = 50  # pending tables read per shard in one sweep
CONFIRM_S = 0.5  # how often unconfirmed tables are checked (embedded mode)
# How often every owned shard is checked for unconfirmed tables; in between only the shards this
# relay marked are (a scan of all 512 shards a replica owns, twice a second, was half an idle
# replica's CPU). The full check finds what another replica marked before a shard changed hands.
CONFIRM_ALL_S = 10.0
HOLD = -2  # a table whose records must wait: its last ones, two generations back, are unread
MAX_HOLD = 5  # generations a table waits at most for a lagging group


def records(entries: list[Entry]) -> list[tuple[int, bytes, list[tuple[str, bytes]]]]:
    """One record per commit: (seq of its last event, value, headers). Events written before
    commits were marked go one record each."""
    out: list[tuple[int, bytes, list[tuple[str, bytes]]]] = []
    i = 0
    while i < len(entries):
        n = max(1, entries[i].opens)
        group = entries[i : i + n]
        value, headers = commit_record([e.data for e in group], [e.kind for e in group])
        out.append((group[-1].seq, value, headers))
        i += len(group)
    return out


class EventRelay:
    def __init__(
        self,
        store: TableStore,
        make_producer: Callable[[], Any],
        metrics: TableMetrics | None = None,
        interval_s: float = 0.05,
        topic: str = TABLE_EVENTS,
        leases: ShardLeases | AllShards | None = None,
        forgetful: Forgetful | None = None,
        now: Callable[[], int] = now_ms,
        sweep_s: float = SWEEP_S,
    ) -> None:
        self.store = store
        self.make_producer = make_producer
        self.metrics = metrics
        self.interval_s = interval_s
        self.topic = topic  # kafka mode: the one topic (with the namespace's prefix)
        self.forgetful = forgetful
        self.now = now  # the generations go by it: the store's clock (a StoreClock) in a replica
        self.sweep_s = sweep_s
        self.producer: Any = None
        self.token = secrets.token_hex(8)
        self.leases = leases or AllShards()
        self._committed: set[str] = set()
        self._swept = 0.0
        self._confirmed = 0.0
        self._owned: list[int] = []
        self._marked: set[int] = set()  # shards that may hold unconfirmed tables (see confirm)
        self._checked_all = 0.0
        self._checked_owned: list[int] = []
        self._incarnation = ""  # the broker's, as of this pass (embedded mode)

    def committed(self, table_id: str) -> None:
        """The core committed events to this table: relay it in the next pass."""
        self._committed.add(table_id)

    async def run_once(self, sweep: bool = True) -> int:
        """One pass over the tables committed here since the last pass and, with `sweep`, every
        pending table of the owned shards: at most four Redis round trips however many tables
        (the pending sets, leases and pointers, the streams, the acknowledgements)."""
        tables = set(self._committed)
        self._committed.clear()
        if sweep:
            self._swept = time.monotonic()
            pending = await self.store.pending_tables(self.leases.owned(), PER_SHARD)
            tables.update(table_id for table_id, _ in pending)
            if self.metrics:
                oldest = min((score for _, score in pending), default=None)
                self.metrics.relay_lag.set(
                    0 if oldest is None else max(0.0, time.time() - oldest / 1000)
                )
        if not tables:
            return 0
        owned = await self.store.lease_for_relay(sorted(tables), self.token, LEASE_MS)
        # Tables another relay holds: try again next pass (it may have read before our commit).
        self._committed.update(tables - owned.keys())
        if not owned:
            return 0
        try:
            at_ms = self.now()
            targets = await self._targets(owned, at_ms)
            held = [t for t, (gen, _) in targets.items() if gen == HOLD]
            self._committed.update(held)  # their turn comes when their last records are read
            sending = {t: owned[t].relayed for t in owned if t in targets and t not in held}
            streams = await self.store.events_after(sending)
            if any(streams.values()) and self.producer is None:
                producer = self.make_producer()
                await producer.start()
                self.producer = producer
            sent: list[tuple[str, int, Any]] = []
            for table_id, entries in streams.items():
                topic = targets[table_id][1]
                for last_seq, value, headers in records(entries):
                    future = await self.producer.send(
                        topic, value=value, key=table_id.encode(), headers=headers
                    )
                    sent.append((table_id, last_seq, future))
            # Acknowledged by Kafka, in order per table (one partition each). Every future is
            # awaited even when one fails, so none is left with an unretrieved exception.
            acks = await asyncio.gather(*(f for _, _, f in sent), return_exceptions=True)
            if failed := next((a for a in acks if isinstance(a, BaseException)), None):
                raise failed
            acked = {t: owned[t].relayed for t in sending}
            where: dict[str, tuple[int, int, int, str]] = {}
            for (table_id, last_seq, _), ack in zip(sent, acks, strict=True):
                meta: Any = ack  # aiokafka's RecordMetadata (a failure raised above)
                acked[table_id] = last_seq
                if self.forgetful is not None:
                    gen = targets[table_id][0]
                    where[table_id] = (gen, meta.partition, meta.offset, self._incarnation)
            await self.store.relay_ack_many(
                acked, where if self.forgetful is not None else None, at_ms
            )
            self._marked.update(shard_of(t) for t in where)
            moved = sum(len(entries) for entries in streams.values())
            if self.metrics:
                self.metrics.relayed.inc(moved)
            return moved
        finally:
            await self.store.release_relay(list(owned), self.token)

    async def _targets(
        self, owned: dict[str, RelayState], at_ms: int
    ) -> dict[str, tuple[int, str]]:
        """Each table's (generation, topic) for this pass; HOLD for one that must wait; tables
        the broker forgot are handed to replay (and left out)."""
        if self.forgetful is None:
            return {t: (0, self.topic) for t in owned}
        f = self.forgetful
        current, incarnation = await f.now(TABLE_EVENTS, at_ms)
        self._incarnation = incarnation
        forgotten = [t for t, s in owned.items() if s.incarnation and s.incarnation != incarnation]
        if forgotten:
            await self.store.replay_many(forgotten, at_ms)
            self._committed.update(forgotten)
        behind = {
            t: TopicPartition(f.log.topic(TABLE_EVENTS, s.gen, incarnation), s.partition)
            for t, s in owned.items()
            if t not in forgotten and s.incarnation and 0 <= s.gen < current
        }
        read = await f.committed.of(TABLE_EVENTS, set(behind.values())) if behind else {}
        out: dict[str, tuple[int, str]] = {}
        for table_id, state in owned.items():
            if table_id in forgotten:
                continue
            gen = current
            if table_id in behind and not confirmed(read[behind[table_id]], state.offset):
                if state.gen == current - 1:
                    gen = state.gen  # stay: its records there are not all read yet
                elif state.gen > current - MAX_HOLD:
                    gen = HOLD
                # else a group is MAX_HOLD periods behind: its order is given up (its lag
                # alert fired long ago) rather than stopping every table for it.
            elif state.incarnation == incarnation and state.gen > gen:
                gen = state.gen  # never back: a table's records are read in generations' order
            out[table_id] = (gen, f.log.topic(TABLE_EVENTS, gen, incarnation))
        await f.topics.ensure({topic for gen, topic in out.values() if gen != HOLD})
        return out

    async def confirm_once(self) -> int:
        """Confirm what every group has read, and relay again what the broker forgot (embedded
        mode). Returns how many tables were confirmed."""
        if self.forgetful is None:
            return 0
        f = self.forgetful
        owned = self.leases.owned()
        shards: Iterable[int] = owned
        if owned == self._checked_owned and time.monotonic() - self._checked_all < CONFIRM_ALL_S:
            shards = self._marked.intersection(owned)
        else:
            self._checked_all, self._checked_owned = time.monotonic(), owned
        waiting, oldest = await self.store.unconfirmed(shards)
        # A shard stays marked until a check finds it empty.
        self._marked = {shard_of(t) for t in waiting} | (self._marked - set(shards))
        if self.metrics:
            age = 0.0 if oldest is None else max(0.0, (self.now() - oldest) / 1000)
            self.metrics.unconfirmed_age.set(age)
        if not waiting:
            return 0
        incarnation = await f.incarnation.current()
        forgotten = [t for t, s in waiting.items() if s.incarnation != incarnation]
        if forgotten:
            log.warning(
                "the broker forgot unconfirmed events: relaying them again",
                extra={"tables": len(forgotten)},
            )
            await self.store.replay_many(forgotten, self.now())
            self._committed.update(forgotten)
        where = {
            t: TopicPartition(f.log.topic(TABLE_EVENTS, s.gen, incarnation), s.partition)
            for t, s in waiting.items()
            if t not in forgotten and s.gen >= 0
        }
        read = await f.committed.of(TABLE_EVENTS, set(where.values())) if where else {}
        done = {
            t: waiting[t].relayed
            for t, tp in where.items()
            if confirmed(read[tp], waiting[t].offset)
        }
        if done:
            await self.store.confirm_many(done)
        return len(done)

    async def run(self, stop: asyncio.Event) -> None:
        backoff = Backoff(self.interval_s)
        while not stop.is_set():
            wait = self.interval_s
            try:
                owned = self.leases.owned()
                due = time.monotonic() - self._swept >= self.sweep_s or owned != self._owned
                self._owned = owned
                moved = await self.run_once(sweep=due)
                if time.monotonic() - self._confirmed >= CONFIRM_S:
                    self._confirmed = time.monotonic()
                    await self.confirm_once()
                backoff.reset()
                if moved >= BACKLOG:
                    continue  # behind: the next pass at once
                # Otherwise wait one interval even after a pass that moved events: passes then
                # carry many commits each instead of spinning on one event at a time.
            except Exception as exc:  # Kafka or Redis down: events stay in the streams
                log.warning("relay failed; will retry", extra={"error": repr(exc)})
                wait = backoff.failed()
            await pause(stop, wait)

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.stop()
            self.producer = None
