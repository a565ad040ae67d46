"""Presence as leases: which players have a live Play stream to a table, across gateways.

Each open stream holds a lease in Redis (`presence:{s<n>}:<table>:<player>`, a sorted set of
stream ids scored by expiry, plus one entry per lease in its shard's `presence:leases:{s<n>}`,
both with the table's shard hash tag so each script touches one Redis Cluster slot), renewed every
`ttl_s / 3` by the gateway that serves it. The first lease of a (table, player) reports a
connect; the last one to go, closed or expired, a disconnect. A gateway that dies stops renewing:
its leases expire after `ttl_s` and any gateway's sweeper reports the disconnect, so the away rule
(60 s, I-8) starts even when nobody closed the stream. Each transition is decided by one Lua
script, so exactly one caller reports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from services.common.deps import evalsha_many
from services.common.shards import VIRTUAL_SHARDS, shard_of, shard_tag

log = logging.getLogger("bg.gateway.presence")

# The pair set outlives its last lease by 10 minutes (a sweeper must still find it to report the
# disconnect), then goes by itself.
# KEYS: pair set, its shard's leases. ARGV: stream, lease member, expiry ms, now ms.
# Returns 1 when this is the pair's only live lease (a connect to report).
_OPEN = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3] + 600000)
if redis.call('ZCARD', KEYS[1]) == 1 then return 1 end
return 0
"""

# KEYS: pair set, its shard's leases. ARGV: stream, lease member, now ms.
# Returns 1 when this removed the pair's last live lease (a disconnect to report).
_CLOSE = """
local had = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[2])
if had == 0 then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[1]) == 0 then return 1 end
return 0
"""

# KEYS: pair set, its shard's leases. ARGV: stream, lease member, expiry ms.
# Renews only a lease that exists.
_RENEW = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
  redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[2])
  redis.call('PEXPIREAT', KEYS[1], ARGV[3] + 600000)
  return 1
end
return 0
"""


def _pair_key(table_id: str, player_id: str) -> str:
    return f"presence:{shard_tag(shard_of(table_id))}:{table_id}:{player_id}"


def leases_key(shard: int) -> str:
    """The shard's leases: "<table>\\0<player>\\0<stream>" -> expiry ms."""
    return f"presence:leases:{shard_tag(shard)}"


def _keys(table_id: str, player_id: str) -> list[str]:
    return [_pair_key(table_id, player_id), leases_key(shard_of(table_id))]


def _member(table_id: str, player_id: str, stream: str) -> str:
    return f"{table_id}\0{player_id}\0{stream}"


class Presence:
    def __init__(self, redis: Any, ttl_s: float = 15.0) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self.mine: dict[str, tuple[str, str]] = {}  # this gateway's live streams
        self._open = redis.register_script(_OPEN)
        self._close = redis.register_script(_CLOSE)
        self._renew = redis.register_script(_RENEW)

    def _now(self) -> int:
        return int(time.time() * 1000)

    async def opened(self, table_id: str, player_id: str, stream: str) -> bool:
        """Take a lease for `stream`; True when the player had no other live stream here."""
        now = self._now()
        self.mine[stream] = (table_id, player_id)
        first = await self._open(
            keys=_keys(table_id, player_id),
            args=[stream, _member(table_id, player_id, stream), now + int(self.ttl_s * 1000), now],
        )
        return bool(first)

    async def closed(self, table_id: str, player_id: str, stream: str) -> bool:
        """Give the lease back; True when it was the player's last live stream to the table."""
        self.mine.pop(stream, None)
        last = await self._close(
            keys=_keys(table_id, player_id),
            args=[stream, _member(table_id, player_id, stream), self._now()],
        )
        return bool(last)

    async def renew_all(self) -> list[tuple[str, str, str]]:
        """Extend every lease of this gateway's live streams (one pipelined round trip).
        Returns the streams whose lease was gone (this gateway stalled past the TTL and a
        sweeper reported them away): the caller opens them again and reports them back."""
        if not self.mine:
            return []
        expiry = self._now() + int(self.ttl_s * 1000)
        live = list(self.mine.items())
        renewed = await evalsha_many(
            self.redis,
            self._renew,
            [
                (_keys(table_id, player_id), [stream, _member(table_id, player_id, stream), expiry])
                for stream, (table_id, player_id) in live
            ],
        )
        return [
            (table_id, player_id, stream)
            for (stream, (table_id, player_id)), ok in zip(live, renewed, strict=True)
            if not ok and stream in self.mine
        ]

    async def expired(self, limit: int = 20) -> list[tuple[str, str]]:
        """Remove leases past their expiry (their gateway died); returns the (table, player)
        pairs that lost their last live stream: disconnects the caller must report. Every
        shard is looked at in one pipelined round trip (at most `limit` leases each)."""
        now = self._now()
        pipe = self.redis.pipeline(transaction=False)
        for shard in range(VIRTUAL_SHARDS):
            pipe.zrangebyscore(leases_key(shard), "-inf", now, start=0, num=limit)
        members = [m for found in await pipe.execute() for m in found]
        gone = []
        for raw in members:
            member = raw.decode() if isinstance(raw, bytes) else str(raw)
            table_id, player_id, stream = member.split("\0")
            last = await self._close(keys=_keys(table_id, player_id), args=[stream, member, now])
            if last:
                gone.append((table_id, player_id))
        return gone

    async def run(
        self, report: Callable[[str, str, bool], Awaitable[None]], stop: asyncio.Event
    ) -> None:
        """Renew this gateway's leases and sweep expired ones, every `ttl_s / 3`."""
        while not stop.is_set():
            try:
                for table_id, player_id, stream in await self.renew_all():
                    if await self.opened(table_id, player_id, stream):
                        await report(table_id, player_id, True)
                for table_id, player_id in await self.expired():
                    log.info(
                        "a stream's gateway went away: player disconnected",
                        extra={"table_id": table_id, "player_id": player_id},
                    )
                    await report(table_id, player_id, False)
            except Exception as exc:  # Redis down: next round
                log.warning("presence round failed", extra={"error": repr(exc)[:300]})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.ttl_s / 3)
