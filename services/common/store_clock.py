"""One reference time for every clock of the tables (issue 42, RULES.md I-40): the store's.

Deadlines are computed, fired and checked by whichever table replica handles a table, each on
its own machine; their wall clocks differ (an NTP step, a paused VM, a failed time sync), and a
replica 2 s fast would time every player out 2 s early. So no replica uses its wall clock: each
keeps an estimate of the store's clock (Valkey's TIME, on every primary) and takes `now` from
it, for the rules (deadlines set and checked), for firing deadlines and for its shard lease.

The estimate is a lower bound: a TIME read between local monotonic instants t0 and t1 returned
S, so at t1 the store's clock read at least S; at any later local instant m it reads at least
S + (m - t1), the estimate (the best of a few reads: the shortest round trip is the tightest).
It trails the store by at most that round trip (plus drift between syncs, a few ppm), and a
skewed or stepped wall clock on the replica changes nothing: only the monotonic clock's rate
counts. Never ahead means a timeout never fires before its deadline by the store's clock; the
commit script refuses a `now` ahead of its own TIME anyway (CLOCK_AHEAD), and one trailing
it by more than `max_behind_ms` (a stalled estimate: CLOCK_BEHIND), so a replica whose estimate
went wrong is fenced, not trusted; it syncs again and retries.

With a Valkey Cluster the estimate is the least over the primaries', never ahead of any.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from services.common.backoff import pause
from services.common.clock import now_ms

log = logging.getLogger("bg.table.store_clock")
SAMPLES = 5  # TIME reads per sync: the shortest round trip gives the estimate
SYNC_S = 1.0


class StoreClock:
    def __init__(
        self,
        read_times: Callable[[], Awaitable[list[int]]],
        local: Callable[[], float] = time.monotonic,
        samples: int = SAMPLES,
    ) -> None:
        """`read_times`: one TIME of every primary, unix ms each (one round trip)."""
        self.read_times = read_times
        self.local = local
        self.samples = samples
        self._base: tuple[int, float] | None = None  # (store ms, local s) of the best read
        self.rtt_ms = 0.0
        self.synced = False

    async def sync(self) -> None:
        """A fresh estimate from a few reads: the one of the shortest round trip."""
        best: tuple[float, int, float] | None = None
        for _ in range(self.samples):
            before = self.local()
            times = await self.read_times()
            after = self.local()
            sample = (after - before, min(times), after)
            if best is None or sample[0] < best[0]:
                best = sample
        assert best is not None
        rtt, store_ms, at = best
        self._set(store_ms, at)
        self.rtt_ms = rtt * 1000
        self.synced = True

    def _set(self, store_ms: int, at: float) -> None:
        """Take a lower bound of the store's clock at local instant `at` (the later of the one
        held and this, since both are lower bounds)."""
        if self._base is None or store_ms - at * 1000 > self._base[0] - self._base[1] * 1000:
            self._base = (store_ms, at)

    def seen(self, store_ms: int) -> None:
        """The store's clock read `store_ms` a moment ago (a refused commit says so)."""
        self._set(store_ms, self.local())

    def stalled(self) -> None:
        """The store refused our `now` as ahead of its clock (drift, or a base from a store
        that came back with another clock): forget the estimate; the next sync makes one."""
        self._base = None
        self.synced = False

    def __call__(self) -> int:
        """The store's clock, unix ms, as a lower bound (before any sync: the wall clock)."""
        if self._base is None:
            return now_ms()
        store_ms, at = self._base
        return store_ms + int((self.local() - at) * 1000)

    async def run(self, stop: asyncio.Event, every_s: float = SYNC_S) -> None:
        while not stop.is_set():
            try:
                await self.sync()
            except Exception as exc:  # the store away: the estimate runs on (drift is ppm)
                log.warning("store clock not synced", extra={"error": repr(exc)[:200]})
            await pause(stop, every_s)


def redis_times(redis: object) -> Callable[[], Awaitable[list[int]]]:
    """TIME of every primary of a Valkey (one) or Valkey Cluster (each), in unix ms."""

    async def read() -> list[int]:
        from redis.asyncio.cluster import RedisCluster

        if isinstance(redis, RedisCluster):
            replies = await redis.time(target_nodes=RedisCluster.PRIMARIES)
            pairs = list(replies.values()) if isinstance(replies, dict) else [replies]
        else:
            pairs = [await redis.time()]  # type: ignore[attr-defined]
        return [int(s) * 1000 + int(us) // 1000 for s, us in pairs]

    return read
