"""The clock worker: each replica fires the deadlines of the shards it looks after.

It keeps each owned shard's earliest deadline in memory, sleeps until the first of them, and
fires what is due through the compare-and-set path (with replicas racing for a shard while the
shards rebalance, one applies the deadline and the others find it no longer due). A commit that
sets its shard's earliest deadline publishes "<shard>:<ms>" on `clocks:wake`, so a sleeping
worker learns of it at once; pub/sub is at most once, so every SWEEP_S the worker also reads
every owned shard's earliest deadline afresh (one pipelined round trip). A replica that dies
leaves its entries in the sets for the replicas that take its shards over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from services.common.backoff import pause
from services.common.clock import now_ms
from services.common.deps import reply_text
from services.common.pubsub_pulse import Pulse
from services.table.adapters.redis_store import WAKE_CHANNEL, TableStore
from services.table.shard_leases import AllShards, ShardLeases
from services.table.tables import TableCore

log = logging.getLogger("bg.table.clock")
BATCH = 200
MAX_SLEEP_S = 1.0  # re-check at least this often (a missed wake-up costs at most this)
# Read every owned shard's earliest deadline afresh this often. Only a lost wake-up (pub/sub
# dropped without the listener noticing) needs it; a resubscribe or a shard moving sweeps at
# once. It runs on the firing path, one command per owned shard: at 1 s it cost a replica a
# tenth of its CPU and put its duration on the lateness of the deadlines due meanwhile.
SWEEP_S = 5.0


class ClockWorker:
    def __init__(
        self,
        store: TableStore,
        core: TableCore,
        leases: ShardLeases | AllShards | None = None,
        concurrency: int = 64,
        now: Callable[[], int] = now_ms,
    ) -> None:
        self.store = store
        self.core = core
        self.leases = leases or AllShards()
        self.now = now
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(concurrency)
        self._earliest: dict[int, int] = {}  # owned shard -> its earliest deadline, as last seen
        self._hinted: dict[int, int] = {}  # wake-ups since the last read from Redis began
        self._swept_ms = 0
        self._owned: set[int] = set()
        self.fired = 0

    async def _listen(self, stop: asyncio.Event) -> None:
        """Wake-ups, resubscribing after Redis (or the cluster node it listens on) fails; the
        sweeps cover what was published meanwhile."""
        while not stop.is_set():
            pubsub = None
            try:
                await self.store.redis.initialize()  # a cluster client learns its nodes first
                pubsub = self.store.redis.pubsub()
                await pubsub.subscribe(WAKE_CHANNEL)
                pulse = Pulse()  # a frozen or cut-off node would only go quiet
                while not stop.is_set():
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if message is not None:
                        pulse.heard()
                        if message["type"] == "message":
                            self.hint(message["data"])
                    await pulse.beat(pubsub)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("clock wake-ups lost; resubscribing", extra={"error": repr(exc)})
                self._swept_ms = 0
                await pause(stop, 0.5)
            finally:
                if pubsub is not None:
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()

    def hint(self, data: bytes | str) -> None:
        """A wake-up message: note the shard's new earliest deadline and wake the loop."""
        text = reply_text(data)
        with contextlib.suppress(ValueError):
            shard, at = (int(part) for part in text.split(":"))
            for seen in (self._earliest, self._hinted):
                seen[shard] = min(at, seen.get(shard, at))
            self._wake.set()

    def _merge(self, shards: list[int], read: dict[int, int]) -> None:
        """Take what Redis said for `shards`, keeping wake-ups that arrived while it was read
        (the read may have missed their commits)."""
        for shard in shards:
            known = [t for t in (read.get(shard), self._hinted.get(shard)) if t is not None]
            if known:
                self._earliest[shard] = min(known)
            else:
                self._earliest.pop(shard, None)

    async def _fire(self, table_id: str) -> None:
        async with self._slots:
            try:
                if await self.core.fire_deadline(table_id):
                    self.fired += 1
            except Exception:
                log.exception("deadline failed", extra={"table_id": table_id})

    async def sweep(self) -> None:
        """Read every owned shard's earliest deadline (forgets shards no longer owned)."""
        self._swept_ms = self.now()
        owned = self.leases.owned()
        self._hinted.clear()
        read = await self.store.earliest(owned)
        self._earliest = {}
        self._merge(owned, read)

    async def run_once(self) -> int:
        """Fire what is due now in the owned shards, the most overdue first and at most BATCH
        (sweeping first when the in-memory view is older than SWEEP_S); returns how many fired."""
        now = self.now()
        owned = set(self.leases.owned())
        if now - self._swept_ms >= SWEEP_S * 1000 or owned != self._owned:
            self._owned = owned  # new shards (a replica left): their deadlines may be due now
            await self.sweep()
        shards = [s for s, at in self._earliest.items() if at <= now and s in owned]
        if not shards:
            return 0
        due = await self.store.due(shards, now, BATCH)
        if due:
            await asyncio.gather(*(self._fire(t) for t in due))
        self._hinted.clear()
        self._merge(shards, await self.store.earliest(shards))
        return len(due)

    def _delay_s(self) -> float:
        owned = set(self.leases.owned())
        first = min((at for s, at in self._earliest.items() if s in owned), default=None)
        if first is None:
            return MAX_SLEEP_S
        return min(MAX_SLEEP_S, max(0.0, (first - self.now()) / 1000))

    async def run(self, stop: asyncio.Event) -> None:
        listener = asyncio.create_task(self._listen(stop), name="clock-wake")
        try:
            while not stop.is_set():
                self._wake.clear()
                try:
                    if await self.run_once() >= BATCH:
                        continue  # more may be due right now
                except Exception:
                    log.exception("clock worker: Redis call failed; retrying")
                    self._swept_ms = 0  # read everything afresh once Redis answers
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._delay_s())
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listener
