"""Rate limits that hold across replicas: token buckets shared through Redis (the gateway's per
player, per peer address and per login name, services/gateway/rate_limits.py; the chat's per
player; the operators' at the identity service).

A bucket holds at most `burst` tokens and gains `per_s` a second; a call takes one, and a call
that finds none is refused with the time until the next token (`retry_after_ms`).

Asking Redis on every call would put a round trip on the command path, so each replica keeps
the buckets itself and every `sync_s` adds its calls to the key's counter in Redis (one script
call per hash bucket, whatever the number of keys: the hashes are named by `key_of(bucket, kind,
window)`, a field per key) and learns from the totals what the other replicas let through, which
it takes from its own bucket. A client on one replica meets the limit exactly; spread over K
replicas it overshoots by at most what the others let through in one sync interval ((K - 1) x
per_s x sync_s). Counters expire two windows later; a Redis outage degrades to per-replica
limits, never to refusing callers.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from services.common.backoff import pause
from services.common.connections import evalsha_many
from services.common.errors import ServiceError

log = logging.getLogger("bg.shared_rate_limits")
WINDOW_S = 10  # the counters' window: they only carry calls from one sync to the next


def peer_address(peer: str) -> str:
    """The address part of a gRPC peer ("ipv4:10.0.0.7:53311" -> "10.0.0.7"): the client's
    connections all count together."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return rest.rsplit(":", 1)[0].strip("[]")  # brackets and port off
    if kind == "ipv4":
        return rest.rsplit(":", 1)[0]
    return peer or "local"


BUCKETS = 16  # hashes per window and kind: spread over a cluster's nodes

# KEYS[1]: the bucket's hash for the window. ARGV: ttl s, then key, count pairs. Returns the
# totals, in order.
_ADD = """
local out = {}
for i = 2, #ARGV, 2 do
  out[#out + 1] = redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return out
"""


@dataclass
class _Bucket:
    tokens: float
    stamp: float  # when `tokens` was last brought up to date
    pending: int = 0  # calls let through here and not yet sent to Redis
    window: int = -1  # the counter window `total` is of
    total: int = 0  # the key's counter in that window, as Redis last said (ours included)


KeyOf = Callable[[int, str, int], str]  # (hash bucket, kind, window) -> the hash's Redis key


class SharedLimiter:
    """A token bucket of `burst` tokens refilled at `per_s` a second per key, shared through
    Redis by every replica."""

    def __init__(
        self,
        redis: Any,
        kind: str,
        per_s: float,
        sync_s: float = 0.1,
        now: Callable[[], float] = time.time,
        burst: float | None = None,
        *,
        key_of: KeyOf,
    ) -> None:
        self.redis = redis
        self.key_of = key_of
        self.kind = kind
        self.per_s = per_s
        self.burst = max(1.0, burst if burst is not None else per_s)
        self.sync_s = sync_s
        self.now = now
        self._script = redis.register_script(_ADD)
        self._buckets: dict[str, _Bucket] = {}

    def _refilled(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(self.burst, now)
        else:
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.per_s)
            bucket.stamp = now
        return bucket

    def take(self, key: str) -> int:
        """Take a token for one call of `key`: 0 when allowed, else the milliseconds until the
        next token (nothing taken)."""
        bucket = self._refilled(key, self.now())
        if bucket.tokens < 1 - 1e-6:  # (the refill's float error never costs a call)
            return max(1, math.ceil((1 - bucket.tokens) / self.per_s * 1000 - 1e-6))
        bucket.tokens -= 1
        bucket.pending += 1
        return 0

    def allow(self, key: str) -> bool:
        return self.take(key) == 0

    def _hash(self, bucket: int, window: int) -> str:
        return self.key_of(bucket, self.kind, window)

    async def sync(self) -> None:
        """Send this replica's calls and take what the others let through from the buckets
        (one script call per hash bucket). Buckets full and idle since an earlier window are
        forgotten."""
        now = self.now()
        window = int(now // WINDOW_S)
        sending: dict[str, int] = {}
        for key, bucket in list(self._buckets.items()):
            self._refilled(key, now)
            if bucket.pending or bucket.tokens < self.burst:
                sending[key] = bucket.pending  # 0: only to learn the others' calls
                bucket.pending = 0
            elif bucket.window != window:
                # Idle and full since an earlier window: nothing to know. (Within the window
                # it stays: its counter there includes our calls, which are not the others'.)
                del self._buckets[key]
        if not sending:
            return
        by_hash: dict[int, list[str]] = {}
        for key in sending:
            by_hash.setdefault(zlib.crc32(key.encode()) % BUCKETS, []).append(key)
        calls = [
            ([self._hash(b, window)], [2 * WINDOW_S, *(x for k in keys for x in (k, sending[k]))])
            for b, keys in by_hash.items()
        ]
        try:
            replies = await evalsha_many(self.redis, self._script, calls)
        except Exception:
            for key, count in sending.items():  # keep them; send them next time
                self._refilled(key, now).pending += count
            raise
        for keys, totals in zip(by_hash.values(), replies, strict=True):
            for key, total in zip(keys, totals, strict=True):
                bucket = self._refilled(key, self.now())
                before = bucket.total if bucket.window == window else 0
                others = int(total) - before - sending[key]
                bucket.window, bucket.total = window, int(total)
                bucket.tokens -= max(0, others)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.sync()
            except Exception as exc:  # Redis away: limits stay local until it is back
                log.warning("rate limit sync failed", extra={"error": repr(exc)[:200]})
            await pause(stop, self.sync_s)


def check(limiter: SharedLimiter, key: str, what: str) -> None:
    """Take a token for `key`, or refuse: RESOURCE_EXHAUSTED RATE_LIMITED saying when."""
    wait_ms = limiter.take(key)
    if wait_ms:
        raise rate_limited(limiter, wait_ms, what)


def rate_limited(limiter: SharedLimiter, wait_ms: int, what: str) -> ServiceError:
    return ServiceError(
        "RATE_LIMITED",
        f"at most {limiter.per_s:g} {what} (bursts of {limiter.burst:g}); retry in {wait_ms} ms",
        status=grpc.StatusCode.RESOURCE_EXHAUSTED,
        retry_after_ms=str(wait_ms),
    )
