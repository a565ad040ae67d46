"""Relays the wallet's outbox table to Kafka, at least once.

A row is marked published only after Kafka acknowledged it, so a crash between commit and publish
(or between publish and marking) only delays or repeats an event; consumers dedupe on event_id.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.backoff import Backoff, pause
from services.common.clock import now_ms as now
from services.common.topics import PLAIN, Namespace
from services.wallet.metrics import WalletMetrics
from services.wallet.schema import outbox

log = logging.getLogger("bg.wallet.outbox")
BATCH = 500


class Publisher(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def send_and_wait(self, topic: str, value: bytes, key: bytes) -> object: ...


class OutboxRelay:
    def __init__(
        self,
        engine: AsyncEngine,
        make_publisher: Callable[[], Publisher],
        metrics: WalletMetrics | None,
        interval_s: float,
        keep_published_s: float = 86_400.0,
        namespace: Namespace = PLAIN,
    ) -> None:
        self.engine = engine
        self.namespace = namespace  # rows name the logical topic; the broker's carries the prefix
        self.make_publisher = make_publisher  # built inside the running loop, on first use
        self.publisher: Publisher | None = None
        self.metrics = metrics
        self.interval_s = interval_s
        self.keep_published_s = keep_published_s
        self._pruned_at = 0.0

    async def prune(self, now_ms: int | None = None) -> int:
        """Delete rows published more than `keep_published_s` ago (the ledger's operations
        and transfers are the record; the outbox is only the way out). Returns rows deleted."""
        now_ms = now() if now_ms is None else now_ms
        cutoff = now_ms - int(self.keep_published_s * 1000)
        async with self.engine.begin() as conn:
            result = await conn.execute(
                delete(outbox).where(
                    outbox.c.published_ms.is_not(None), outbox.c.published_ms < cutoff
                )
            )
        return int(result.rowcount or 0)

    async def publish_once(self) -> int:
        """Publish every pending row (in id order); returns how many were published."""
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(outbox.c.id, outbox.c.topic, outbox.c.key, outbox.c.payload)
                    .where(outbox.c.published_ms.is_(None))
                    .order_by(outbox.c.id)
                    .limit(BATCH)
                )
            ).all()
        if not rows:
            await self._gauge()
            return 0
        if self.publisher is None:
            publisher = self.make_publisher()
            await publisher.start()
            self.publisher = publisher
        for row in rows:  # in order: per-key order on Kafka follows the ledger's order
            await self.publisher.send_and_wait(
                self.namespace.topic(row.topic), row.payload, row.key.encode()
            )
        async with self.engine.begin() as conn:
            await conn.execute(
                update(outbox)
                .where(outbox.c.id.in_([r.id for r in rows]))
                .values(published_ms=now())
            )
        if self.metrics:
            self.metrics.published.inc(len(rows))
        await self._gauge()
        return len(rows)

    async def _gauge(self) -> None:
        if self.metrics is None:
            return
        async with self.engine.connect() as conn:
            count, oldest = (
                await conn.execute(
                    select(func.count(), func.min(outbox.c.created_ms)).where(
                        outbox.c.published_ms.is_(None)
                    )
                )
            ).one()
        self.metrics.outbox_backlog.set(count)
        self.metrics.outbox_oldest_age.set(
            0 if oldest is None else max(0.0, time.time() - oldest / 1000)
        )

    async def run(self, stop: asyncio.Event) -> None:
        backoff = Backoff(self.interval_s)
        while not stop.is_set():
            wait = self.interval_s
            try:
                if time.monotonic() - self._pruned_at > 60:
                    self._pruned_at = time.monotonic()
                    await self.prune()
                published = await self.publish_once()
                backoff.reset()
                if published:
                    continue
            except Exception as exc:  # Kafka or the database is down: keep the rows, retry later
                log.warning("outbox relay failed; will retry", extra={"error": repr(exc)})
                wait = backoff.failed()
            await pause(stop, wait)

    async def close(self) -> None:
        if self.publisher is not None:
            await self.publisher.stop()
            self.publisher = None
