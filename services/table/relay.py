"""Relays every table's Redis stream to the Kafka topic `table-events`, at least once.

Tables with unrelayed events sit in their shard's `relay:{s<n>}` set. Each pass takes the tables
this replica committed since the last pass (the core tells it: the events leave at once) and,
every SWEEP_S, every pending table of the shards it looks after (the tables other replicas
committed and died before relaying). It takes a short lease on each table (so one relay at a
time publishes a table, in order), reads the streams after each table's `relayed` pointer,
publishes in order keyed by table id, waits for Kafka's acknowledgements, then moves the
pointers; every step is one pipelined round trip for the whole batch. A crash after publishing
and before the pointer moves re-publishes the same events, in the
same order: consumers dedupe on (table_id, seq).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from services.common.backoff import Backoff, pause
from services.common.topics import TABLE_EVENTS
from services.table.metrics import TableMetrics
from services.table.shard_leases import AllShards, ShardLeases
from services.table.store import TableStore

log = logging.getLogger("bg.table.relay")
LEASE_MS = 10_000
BACKLOG = 1000  # events in one pass that mean "behind": go again without waiting
# Look at every owned shard's pending tables this often: only tables whose committing replica
# died before relaying them (or whose pass failed) need it; the rest leave at once.
SWEEP_S = 5.0
PER_SHARD = 50  # pending tables read per shard in one sweep


class EventRelay:
    def __init__(
        self,
        store: TableStore,
        make_producer: Callable[[], Any],
        metrics: TableMetrics | None = None,
        interval_s: float = 0.05,
        topic: str = TABLE_EVENTS,
        leases: ShardLeases | AllShards | None = None,
    ) -> None:
        self.store = store
        self.make_producer = make_producer
        self.metrics = metrics
        self.interval_s = interval_s
        self.topic = topic
        self.producer: Any = None
        self.token = secrets.token_hex(8)
        self.leases = leases or AllShards()
        self._committed: set[str] = set()
        self._swept = 0.0
        self._owned: list[int] = []

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
            streams = await self.store.events_after(owned)
            if any(events for events in streams.values()) and self.producer is None:
                producer = self.make_producer()
                await producer.start()
                self.producer = producer
            futures = [
                await self.producer.send(self.topic, value=data, key=table_id.encode())
                for table_id, events in streams.items()
                for _, data in events
            ]
            # Acknowledged by Kafka, in order per table (one partition each). Every future is
            # awaited even when one fails, so none is left with an unretrieved exception.
            acks = await asyncio.gather(*futures, return_exceptions=True)
            if failed := next((a for a in acks if isinstance(a, BaseException)), None):
                raise failed
            acked = {t: events[-1][0] if events else owned[t] for t, events in streams.items()}
            await self.store.relay_ack_many(acked)
            moved = sum(len(events) for events in streams.values())
            if self.metrics:
                self.metrics.relayed.inc(moved)
            return moved
        finally:
            await self.store.release_relay(list(owned), self.token)

    async def run(self, stop: asyncio.Event) -> None:
        backoff = Backoff(self.interval_s)
        while not stop.is_set():
            wait = self.interval_s
            try:
                owned = self.leases.owned()
                due = time.monotonic() - self._swept >= SWEEP_S or owned != self._owned
                self._owned = owned
                moved = await self.run_once(sweep=due)
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
