"""Rate limits that hold across gateway replicas: per player (from the token) and per peer
address, counted in Redis in one-second windows.

Asking Redis on every call would put a round trip on the command path, so each gateway decides
locally from the window's total as Redis last told it plus its own calls since, and every
`sync_s` adds its counts to the window's hashes and reads the totals back (one script call per
bucket, whatever the number of players: `rl:{rl<b>}:<kind>:<window>`, field per key). Between
syncs a gateway lets at most twice its share of one interval through (2 x rate x sync_s), so
across K gateways a client overshoots the limit by at most K times that in a window (with the
defaults, 10 calls per gateway). Hashes expire two windows later; a Redis outage degrades to
per-gateway limits, never to refusing players.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import zlib
from collections.abc import Callable
from typing import Any

import grpc

from services.common.backoff import pause
from services.common.deps import evalsha_many
from services.common.errors import ServiceError

log = logging.getLogger("bg.gateway.rate_limits")


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


class SharedLimiter:
    """A fixed-window limit of `per_s` calls per key per second, shared through Redis."""

    def __init__(
        self,
        redis: Any,
        kind: str,
        per_s: float,
        sync_s: float = 0.1,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.redis = redis
        self.kind = kind
        self.per_s = per_s
        self.sync_s = sync_s
        self.now = now
        # Calls one gateway may let through between syncs beyond what it knows of.
        self.local_cap = max(2, math.ceil(2 * per_s * sync_s))
        self._script = redis.register_script(_ADD)
        self._window = 0
        self._known: dict[str, int] = {}  # key -> the window's total, as Redis last said
        self._pending: dict[str, int] = {}  # key -> this gateway's calls not yet sent

    def _roll(self) -> int:
        window = int(self.now())
        if window != self._window:
            self._window = window
            self._known.clear()
            self._pending.clear()
        return window

    def allow(self, key: str) -> bool:
        self._roll()
        pending = self._pending.get(key, 0)
        if pending >= self.local_cap or self._known.get(key, 0) + pending >= self.per_s:
            return False
        self._pending[key] = pending + 1
        return True

    def _hash(self, bucket: int, window: int) -> str:
        return f"rl:{{rl{bucket}}}:{self.kind}:{window}"

    async def sync(self) -> None:
        """Send this gateway's counts and learn the totals (one script call per bucket)."""
        window = self._roll()
        pending, self._pending = self._pending, {}
        for key, total in self._known.items():
            if total * 2 >= self.per_s:  # near its limit: learn what the others let through
                pending.setdefault(key, 0)
        if not pending:
            return
        by_bucket: dict[int, list[str]] = {}
        for key in pending:
            by_bucket.setdefault(zlib.crc32(key.encode()) % BUCKETS, []).append(key)
        calls = [
            ([self._hash(b, window)], [2, *(x for k in keys for x in (k, pending[k]))])
            for b, keys in by_bucket.items()
        ]
        try:
            replies = await evalsha_many(self.redis, self._script, calls)
        except Exception:
            if window == self._window:  # keep them; send them next time
                for key, count in pending.items():
                    self._pending[key] = self._pending.get(key, 0) + count
            raise
        if window != self._window:
            return  # a new window began meanwhile: these totals are history
        for keys, totals in zip(by_bucket.values(), replies, strict=True):
            for key, total in zip(keys, totals, strict=True):
                self._known[key] = int(total)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.sync()
            except Exception as exc:  # Redis away: limits stay local until it is back
                log.warning("rate limit sync failed", extra={"error": repr(exc)[:200]})
            await pause(stop, self.sync_s)


class RateLimits:
    """The gateway's limits: per player (every authenticated call and Play command), per peer
    address (every call, Login included) and per login name (a device or an email: guessing
    passwords or device ids from many addresses), all shared with the other gateways."""

    def __init__(
        self,
        redis: Any,
        per_player_s: float,
        per_peer_s: float,
        sync_s: float = 0.1,
        per_login_s: float = 5.0,
    ) -> None:
        self.players = SharedLimiter(redis, "player", per_player_s, sync_s)
        self.peers = SharedLimiter(redis, "peer", per_peer_s, sync_s)
        self.logins = SharedLimiter(redis, "login", per_login_s, sync_s)

    def check_player(self, player_id: str) -> None:
        if not self.players.allow(player_id):
            raise _limited(f"at most {self.players.per_s:g} calls per second per player")

    def check_peer(self, address: str) -> None:
        if not self.peers.allow(address):
            raise _limited(f"at most {self.peers.per_s:g} calls per second from one address")

    def check_login(self, who: str) -> None:
        """`who`: "device:<hash>" or "email:<address>" (never a secret in a Redis key)."""
        if not self.logins.allow(who):
            raise _limited(f"at most {self.logins.per_s:g} logins per second for one account")

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(self.players.run(stop), self.peers.run(stop), self.logins.run(stop))


def _limited(message: str) -> ServiceError:
    return ServiceError("RATE_LIMITED", message, status=grpc.StatusCode.RESOURCE_EXHAUSTED)
