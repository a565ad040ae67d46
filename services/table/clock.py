"""The clock worker: each replica fires the deadlines of the shards it looks after.

It keeps each owned shard's earliest deadline in memory, sleeps until the first of them, and
fires what is due through the compare-and-set path (with replicas racing for a shard while the
shards rebalance, one applies the deadline and the others find it no longer due). A commit that
sets its shard's earliest deadline publishes "<shard>:<ms>" on `clocks:wake`, so a sleeping
worker learns of it at once; pub/sub is at most once, so every SWEEP_S the worker also reads
every owned shard's earliest deadline afresh. A replica that dies leaves its entries in the sets
for the replicas that take its shards over.

On a Valkey Cluster the work goes by node: each node's due shards are read and fired by a pass
of their own, and the passes run side by side, so a frozen or cut-off primary holds only the
deadlines it serves (it could not fire them anyway) while the other nodes' fire on time; a pass
that failed reads the slots again before its next try, which finds the promoted replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable

from services.common.backoff import pause
from services.common.clock import now_ms
from services.common.connections import reply_text
from services.common.pubsub_pulse import Pulse
from services.contracts.redis_keys import WAKE_CHANNEL
from services.table.adapters.redis_store import TableStore
from services.table.shard_leases import AllShards, ShardLeases
from services.table.table_core import TableCore

log = logging.getLogger("bg.table.clock")
BATCH = 200
MAX_SLEEP_S = 1.0  # re-check at least this often (a missed wake-up costs at most this)
# Read every owned shard's earliest deadline afresh this often. Only a lost wake-up (pub/sub
# dropped without the listener noticing) needs it; a resubscribe or a shard moving sweeps at
# once. It runs on the firing path, one command per owned shard: at 1 s it cost a replica a
# tenth of its CPU and put its duration on the lateness of the deadlines due meanwhile.
SWEEP_S = 5.0
REST_S = 0.05  # a node whose pass failed is tried again after this (the slots re-read first)


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
        self._reads: dict[int, dict[int, int]] = {}  # per read in flight: wake-ups since it began
        self._swept_ms = 0
        self._unswept: set[int] = set()  # owned shards the current sweep has not read yet
        self._owned: set[int] = set()
        self._passes: dict[str, asyncio.Task[int]] = {}  # node -> its pass in flight
        self._failed: dict[str, int] = {}  # node -> when its last pass failed
        self._wake_at = 0  # when the loop means to wake by itself (ms)
        self._handing: set[asyncio.Future[None]] = set()  # hand-overs being published
        # The shards as `shards_changed` last had them (or as the leases had them at the start).
        self._looked_after: set[int] = set(self.leases.owned())
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
                # redis-py connects again and subscribes again by itself when the connection
                # breaks (the client's retry policy): no error here, the hints meanwhile lost.
                pubsub.connection.register_connect_callback(self._resubscribed)
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

    def _resubscribed(self, connection: object) -> None:
        """The wake-up channel's connection came back by itself: sweep, as after a failure."""
        log.warning("clock wake-ups reconnected; sweeping")
        self._swept_ms = 0
        self._wake.set()

    def hint(self, data: bytes | str) -> None:
        """A wake-up message: note the shard's new earliest deadline, and wake the loop if it
        is sooner than the loop means to wake anyway. Most are not (a turn's clock is seconds
        away, the loop wakes every second), and every commit that starts a clock publishes one
        to every replica: a pass over the owned shards for each was work per command."""
        text = reply_text(data)
        with contextlib.suppress(ValueError):
            shard, at = (int(part) for part in text.split(":"))
            self.sooner(shard, at)

    def looks_after(self, shard: int) -> bool:
        """This worker fires `shard`'s deadlines: a commit in its process then tells it
        directly (`sooner`) instead of publishing a wake-up every replica would read."""
        return self.leases.owns(shard)

    def sooner(self, shard: int, at: int) -> None:
        """`shard`'s earliest deadline is now `at` (a commit's, here or published)."""
        for seen in (self._earliest, *self._reads.values()):
            seen[shard] = min(at, seen.get(shard, at))
        if at < self._wake_at:  # (the loop sets it before each sleep)
            self._wake.set()

    def shards_changed(self, owned: list[int]) -> None:
        """The replica's shards changed (its lease's renewal): publish the earliest deadline of
        each shard it no longer looks after, as it knows them. Commits here told only this
        worker of them, and the new owner's first read of the shard may have come before them."""
        now_owned, before = set(owned), self._looked_after
        self._looked_after = now_owned
        lost = {s: at for s, at in self._earliest.items() if s in before and s not in now_owned}
        if lost:
            task = asyncio.ensure_future(self._hand_over(lost))
            self._handing.add(task)
            task.add_done_callback(self._handing.discard)

    async def _hand_over(self, lost: dict[int, int]) -> None:
        try:
            for shard, at in lost.items():
                await self.store.wake(shard, at)
        except Exception as exc:  # the new owner's sweeps find them (within SWEEP_S)
            log.warning("clock hand-over not published", extra={"error": repr(exc)})

    def _merge(self, shards: list[int], read: dict[int, int], hinted: dict[int, int]) -> None:
        """Take what Redis said for `shards`, keeping wake-ups that arrived while it was read
        (the read may have missed their commits)."""
        for shard in shards:
            known = [t for t in (read.get(shard), hinted.get(shard)) if t is not None]
            if known:
                self._earliest[shard] = min(known)
            else:
                self._earliest.pop(shard, None)

    async def _earliest_of(self, shards: list[int]) -> None:
        hinted: dict[int, int] = {}
        key = id(hinted)  # by identity: two reads' wake-ups may be equal
        self._reads[key] = hinted
        try:
            self._merge(shards, await self.store.earliest(shards), hinted)
        finally:
            del self._reads[key]

    async def _fire(self, table_id: str) -> None:
        async with self._slots:
            try:
                if await self.core.fire_deadline(table_id):
                    self.fired += 1
            except Exception:
                log.exception("deadline failed", extra={"table_id": table_id})

    async def _pass(self, node: str, due: list[int], unswept: list[int]) -> int:
        """One node's turn: read the earliest deadlines of its `unswept` shards, fire what is due
        among them and `due`, the most overdue first and at most BATCH, then read those shards'
        earliest deadlines again; returns how many fired."""
        try:
            if node in self._failed:
                await self.store.read_slots_again(node)  # its slots may have moved meanwhile
            if unswept:
                await self._earliest_of(unswept)
                now = self.now()
                due = sorted({*due, *(s for s in unswept if self._earliest.get(s, now + 1) <= now)})
            if not due:
                return 0
            tables = await self.store.due(due, self.now(), BATCH)
        except Exception:
            self._unswept.update(unswept)  # the next pass to reach them sweeps them
            raise
        if tables:
            await asyncio.gather(*(self._fire(t) for t in tables))
        await self._earliest_of(due)
        return len(tables)

    def _launch(self) -> float:
        """Start a pass for each node that has due or unswept shards and no pass in flight
        (nor a failure too recent); returns how long the loop may sleep (a pass ending wakes
        it, so the due shards of a node in a pass do not count)."""
        now = self.now()
        owned = set(self.leases.owned())
        if now - self._swept_ms >= SWEEP_S * 1000 or owned != self._owned:
            self._swept_ms = now
            if owned != self._owned:  # new shards (a replica left): their deadlines may be due
                self._owned = owned
                self._earliest = {s: at for s, at in self._earliest.items() if s in owned}
            self._unswept = set(owned)
        self._unswept &= owned
        due = {s for s, at in self._earliest.items() if at <= now and s in owned}
        wake = now + int(MAX_SLEEP_S * 1000)
        for node, shards in self.store.nodes_of(due | self._unswept).items():
            failed = self._failed.get(node)
            if failed is not None and now - failed < REST_S * 1000:
                wake = min(wake, failed + int(REST_S * 1000))
                continue
            if node in self._passes:
                continue
            unswept = [s for s in shards if s in self._unswept]
            self._unswept.difference_update(unswept)
            mine = [s for s in shards if s in due]
            task = asyncio.create_task(self._pass(node, mine, unswept), name=f"clock-{node}")
            self._passes[node] = task
            task.add_done_callback(functools.partial(self._ended, node))
        for node, at in list(self._failed.items()):  # long gone (its slots moved elsewhere)
            if now - at > 60_000:
                del self._failed[node]
        later = (at for s, at in self._earliest.items() if at > now and s in owned)
        return max(0.0, (min(wake, min(later, default=wake)) - now) / 1000)

    def _ended(self, node: str, task: asyncio.Task[int]) -> None:
        self._passes.pop(node, None)
        self._wake.set()  # more may be due (a full batch), or the node may be tried again
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            self._failed.pop(node, None)
            return
        if node not in self._failed:
            log.warning("clock pass failed; retrying", extra={"node": node, "error": repr(exc)})
        self._failed[node] = self.now()

    async def run(self, stop: asyncio.Event) -> None:
        listener = asyncio.create_task(self._listen(stop), name="clock-wake")
        try:
            while not stop.is_set():
                self._wake.clear()
                delay = self._launch()
                self._wake_at = self.now() + int(delay * 1000)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
        finally:
            tasks = [listener, *self._passes.values()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
