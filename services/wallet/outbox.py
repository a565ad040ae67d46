"""Relays the wallet's outbox table to Kafka, at least once.

A row is marked published only after Kafka acknowledged it, so a crash between commit and publish
(or between publish and marking) only delays or repeats an event; consumers dedupe on event_id.
A pass sends its rows together (in id order, so per key in the ledger's order) and waits for
every acknowledgement once: one produce request, not one per row.

Rows go out through the event log port (services/common/log_port.py), and each is kept until
the log's receipt says it may go: a KEPT receipt (production Kafka's) confirms the row as it is
marked published; any other is kept in the row and checked every CONFIRM_S until the log says
every group has read it (confirmed) or that it lost it (published again). Only confirmed rows
are pruned. The same code in every mode.
"""

from __future__ import annotations

import asyncio
import logging
import time
from asyncio import FIRST_COMPLETED

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from services.common.backoff import Backoff, pause
from services.common.clock import now_ms as now
from services.common.log_port import KEPT, Outgoing, Publisher, Receipt, Verdict
from services.wallet.metrics import WalletMetrics
from services.wallet.schema import outbox

log = logging.getLogger("bg.wallet.outbox")
BATCH = 500
CONFIRM_S = 1.0  # how often rows sent with a receipt to confirm are checked (none on Kafka)


class OutboxRelay:
    def __init__(
        self,
        engine: AsyncEngine,
        publisher: Publisher,
        metrics: WalletMetrics | None,
        interval_s: float,
        keep_published_s: float = 86_400.0,
    ) -> None:
        self.engine = engine
        self.publisher = publisher  # rows name the logical topic; the log maps it
        self.metrics = metrics
        self.interval_s = interval_s
        self.keep_published_s = keep_published_s
        self._pruned_at = 0.0
        self._confirmed_at = 0.0
        self._woken = asyncio.Event()

    def wake(self) -> None:
        """An operation here just committed rows: the next pass at once, not after the idle
        poll (which stays for rows of replicas that died before relaying theirs)."""
        self._woken.set()

    async def _idle(self, stop: asyncio.Event, seconds: float) -> None:
        woken = asyncio.ensure_future(self._woken.wait())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait((woken, stopped), timeout=seconds, return_when=FIRST_COMPLETED)
        finally:
            woken.cancel()
            stopped.cancel()
        self._woken.clear()

    async def prune(self, now_ms: int | None = None) -> int:
        """Delete rows published more than `keep_published_s` ago (the ledger's operations
        and transfers are the record; the outbox is only the way out). Returns rows deleted."""
        now_ms = now() if now_ms is None else now_ms
        cutoff = now_ms - int(self.keep_published_s * 1000)
        async with self.engine.begin() as conn:
            result = await conn.execute(
                delete(outbox).where(
                    outbox.c.confirmed_ms.is_not(None), outbox.c.published_ms < cutoff
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
        out = [Outgoing(row.topic, row.key.encode(), row.payload) for row in rows]
        receipts = await self.publisher.publish(out, now())  # in order: per key, the ledger's
        published = now()
        kept = [r.id for r, p in zip(rows, receipts, strict=True) if p == KEPT]
        async with self.engine.begin() as conn:
            await _lock(conn, [r.id for r in rows])
            if kept:  # one statement for a whole batch (every row, on Kafka)
                await conn.execute(
                    update(outbox)
                    .where(outbox.c.id.in_(kept))
                    .values(published_ms=published, confirmed_ms=published)
                )
            for row, p in zip(rows, receipts, strict=True):
                assert isinstance(p, str)  # a row follows nothing: never held back
                if p != KEPT:
                    await conn.execute(
                        update(outbox)
                        .where(outbox.c.id == row.id)
                        .values(published_ms=published, sent_receipt=p)
                    )
        if self.metrics:
            self.metrics.published.inc(len(rows))
        await self._gauge()
        return len(rows)

    async def confirm_once(self) -> int:
        """Confirm the rows the log says every reading group has read; publish again the rows it
        lost. Returns how many were confirmed (rows with KEPT receipts never wait here)."""
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(outbox.c.id, outbox.c.topic, outbox.c.sent_receipt)
                    .where(outbox.c.confirmed_ms.is_(None), outbox.c.published_ms.is_not(None))
                    .order_by(outbox.c.id)
                    .limit(BATCH)
                )
            ).all()
        if not rows:
            return 0
        verdicts: dict[int, Verdict] = {}
        for logical in {r.topic for r in rows}:
            mine = [r for r in rows if r.topic == logical]
            receipts = [Receipt(r.sent_receipt or KEPT) for r in mine]
            checked = await self.publisher.check(logical, receipts)
            verdicts.update((r.id, v) for r, v in zip(mine, checked, strict=True))
        lost = [i for i, v in verdicts.items() if v is Verdict.LOST]
        done = [i for i, v in verdicts.items() if v is Verdict.READ]
        async with self.engine.begin() as conn:
            await _lock(conn, sorted([*lost, *done]))
            if lost:
                log.warning(
                    "the log lost outbox rows: publishing them again",
                    extra={"rows": len(lost)},
                )
                await conn.execute(
                    update(outbox)
                    .where(outbox.c.id.in_(lost))
                    .values(published_ms=None, sent_receipt=None)
                )
            if done:
                await conn.execute(
                    update(outbox).where(outbox.c.id.in_(done)).values(confirmed_ms=now())
                )
        return len(done)

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
                if time.monotonic() - self._confirmed_at >= CONFIRM_S:
                    self._confirmed_at = time.monotonic()
                    await self.confirm_once()
                backoff.reset()
                if published:
                    continue
            except Exception as exc:  # Kafka or the database is down: keep the rows, retry later
                log.warning("outbox relay failed; will retry", extra={"error": repr(exc)})
                await pause(stop, backoff.failed())  # a wake-up does not cut a backoff short
                continue
            await self._idle(stop, wait)

    async def close(self) -> None:
        await self.publisher.close()


async def _lock(conn: AsyncConnection, ids: list[int]) -> None:
    """Lock the rows about to be marked, in id order: every wallet replica relays every row,
    and two marking the same rows in different orders deadlocked on PostgreSQL (seen in the
    soak; SQLite has one writer and no row locks)."""
    if ids:
        query = select(outbox.c.id).where(outbox.c.id.in_(ids)).order_by(outbox.c.id)
        await conn.execute(query.with_for_update())
