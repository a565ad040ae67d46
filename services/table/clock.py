"""The clock worker: every replica sleeps until the earliest deadline and fires it.

A commit that sets a new earliest deadline publishes it on `clocks:wake`, so a sleeping worker
wakes early. Firing goes through the compare-and-set path: with several replicas racing, one
applies the deadline and the others find it no longer due. A replica that dies mid-way leaves
the entry in the sorted set for the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from services.table.store import WAKE_CHANNEL, TableStore
from services.table.tables import TableCore, wall_ms

log = logging.getLogger("bg.table.clock")
BATCH = 200
MAX_SLEEP_S = 1.0  # re-check at least this often (a missed wake-up costs at most this)


class ClockWorker:
    def __init__(
        self,
        store: TableStore,
        core: TableCore,
        concurrency: int = 64,
        now: Callable[[], int] = wall_ms,
    ) -> None:
        self.store = store
        self.core = core
        self.now = now
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(concurrency)
        self.fired = 0

    async def _listen(self, stop: asyncio.Event) -> None:
        pubsub = self.store.redis.pubsub()
        await pubsub.subscribe(WAKE_CHANNEL)
        try:
            while not stop.is_set():
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if message is not None:
                    self._wake.set()
        finally:
            await pubsub.aclose()

    async def _fire(self, table_id: str) -> None:
        async with self._slots:
            try:
                if await self.core.fire_deadline(table_id):
                    self.fired += 1
            except Exception:
                log.exception("deadline failed", extra={"table_id": table_id})

    async def run_once(self) -> int:
        """Fire everything due now; returns how many tables were due."""
        due = await self.store.due(self.now(), BATCH)
        if due:
            await asyncio.gather(*(self._fire(t) for t in due))
        return len(due)

    async def run(self, stop: asyncio.Event) -> None:
        listener = asyncio.create_task(self._listen(stop), name="clock-wake")
        try:
            while not stop.is_set():
                try:
                    if await self.run_once() >= BATCH:
                        continue  # more may be due right now
                    earliest = await self.store.earliest()
                except Exception:
                    log.exception("clock worker: Redis call failed; retrying")
                    earliest = None
                delay = (
                    MAX_SLEEP_S if earliest is None else max(0.0, (earliest - self.now()) / 1000)
                )
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), min(delay, MAX_SLEEP_S))
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listener
