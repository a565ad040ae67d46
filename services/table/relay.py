"""Relays every table's Redis stream to the Kafka topic `table-events`, at least once.

Tables with unrelayed events sit in `relay:pending`. For each, a replica takes a short lease
(so one relay at a time publishes a table, in order), reads the stream after the table's
`relayed` pointer, publishes in order keyed by table id, waits for Kafka's acknowledgement, then
moves the pointer. A crash after publishing and before the pointer moves re-publishes the same
events, in the same order: consumers dedupe on (table_id, seq).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from services.common.topics import TABLE_EVENTS
from services.table.metrics import TableMetrics
from services.table.store import TableStore

log = logging.getLogger("bg.table.relay")
LEASE_MS = 10_000


class EventRelay:
    def __init__(
        self,
        store: TableStore,
        make_producer: Callable[[], Any],
        metrics: TableMetrics | None = None,
        interval_s: float = 0.05,
        topic: str = TABLE_EVENTS,
    ) -> None:
        self.store = store
        self.make_producer = make_producer
        self.metrics = metrics
        self.interval_s = interval_s
        self.topic = topic
        self.producer: Any = None
        self.token = secrets.token_hex(8)

    async def relay_table(self, table_id: str) -> int:
        lock = f"relay:lock:{{{table_id}}}"
        if not await self.store.lock(lock, self.token, LEASE_MS):
            return 0  # another replica is relaying this table
        try:
            after = await self.store.relayed(table_id)
            events = await self.store.events(table_id, after)
            if not events:
                await self.store.relay_ack(table_id, after)
                return 0
            if self.producer is None:
                producer = self.make_producer()
                await producer.start()
                self.producer = producer
            futures = [
                await self.producer.send(self.topic, value=data, key=table_id.encode())
                for _, data in events
            ]
            for future in futures:
                await future  # acknowledged by Kafka, in order
            await self.store.relay_ack(table_id, events[-1][0])
            if self.metrics:
                self.metrics.relayed.inc(len(events))
            return len(events)
        finally:
            await self.store.unlock(lock, self.token)

    async def run_once(self) -> int:
        pending = await self.store.pending_tables(200)
        if self.metrics:
            oldest = min((score for _, score in pending), default=None)
            self.metrics.relay_lag.set(
                0 if oldest is None else max(0.0, time.time() - oldest / 1000)
            )
        total = 0
        for table_id, _ in pending:
            total += await self.relay_table(table_id)
        return total

    async def run(self, stop: asyncio.Event) -> None:
        backoff = self.interval_s
        while not stop.is_set():
            try:
                moved = await self.run_once()
                backoff = self.interval_s
                if moved:
                    continue
            except Exception as exc:  # Kafka or Redis down: events stay in the streams
                log.warning("relay failed; will retry", extra={"error": repr(exc)})
                backoff = min(backoff * 2, 5.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), backoff)

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.stop()
            self.producer = None
