"""Presence as gateway leases: which players have a live Play stream to a table, across gateways.

Each gateway process holds one lease, its entry in `presence:gateways` (gateway id -> expiry
ms), renewed every `ttl_s / 3` with one command however many streams it serves. Each open stream
is a member "<gateway>\0<stream>" of its (table, player) set `presence:{s<n>}:<table>:<player>`
(the table's shard hash tag, so each script touches one Redis Cluster slot) and a member
"<table>\0<player>\0<stream>" of its gateway's set `presence:streams:{<gateway>}`, written first
so a gateway that dies mid-open leaves nothing unswept. The first member of a (table, player)
reports a connect, the last one to go a disconnect; each transition is decided by one Lua script,
so exactly one caller reports it.

A gateway that dies stops renewing: after `ttl_s` any gateway's sweeper closes the streams in
its set (reporting the disconnects, so the away rule, 60 s, I-8, starts even when nobody closed
the stream) and then forgets it. A gateway that stalled past its lease finds it gone when it next
renews: it takes a new id and opens its live streams again under it (reporting the connects the
sweeper undid), so nothing the sweeper does to the old id touches them.

(Per-stream leases, renewed one script call per stream, cost a gateway 2,000 calls a second at
10,000 streams; this costs one.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from services.common.clock import now_ms
from services.common.deps import evalsha
from services.common.shards import shard_of, shard_tag

log = logging.getLogger("bg.gateway.presence")

GATEWAYS_KEY = "presence:gateways"
SWEEP_BATCH = 500  # streams of dead gateways closed per sweep

# KEYS: pair set. ARGV: member. Returns 1 when this is the pair's first member (a connect).
_OPEN = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 and redis.call('SCARD', KEYS[1]) == 1 then
  return 1
end
return 0
"""

# KEYS: pair set. ARGV: member. Returns 1 when this removed its last member (a disconnect).
_CLOSE = """
if redis.call('SREM', KEYS[1], ARGV[1]) == 1 and redis.call('EXISTS', KEYS[1]) == 0 then
  return 1
end
return 0
"""

# KEYS: the gateways. ARGV: gateway, new expiry ms, now ms. Renews a lease that has not lapsed
# (returns 1); a lapsed or swept one is left to the sweepers (returns 0).
_RENEW = """
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expiry and tonumber(expiry) >= tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
return 0
"""

# KEYS: the gateways. ARGV: gateway, now ms. Forgets a lapsed gateway (the caller found its
# streams all closed).
_FORGET = """
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expiry and tonumber(expiry) < tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
return 0
"""


def _pair_key(table_id: str, player_id: str) -> str:
    return f"presence:{shard_tag(shard_of(table_id))}:{table_id}:{player_id}"


def _stream_member(table_id: str, player_id: str, stream: str) -> str:
    return f"{table_id}\0{player_id}\0{stream}"


def streams_key(gateway: str) -> str:
    """A gateway's open streams: "<table>\0<player>\0<stream>"."""
    return f"presence:streams:{{{gateway}}}"


class Presence:
    def __init__(self, redis: Any, ttl_s: float = 15.0) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self.gateway = uuid.uuid4().hex[:16]  # this process's lease; a new one after a lapse
        # This gateway's live streams: stream -> (table, player, the gateway id it opened under).
        self.mine: dict[str, tuple[str, str, str]] = {}
        self._registered = False
        self._open = redis.register_script(_OPEN)
        self._close_script = redis.register_script(_CLOSE)
        self._renew = redis.register_script(_RENEW)
        self._forget = redis.register_script(_FORGET)

    def _now(self) -> int:
        return now_ms()

    async def _register(self) -> None:
        """Take this gateway's lease (before its first stream, so sweepers can find them)."""
        await self.redis.zadd(GATEWAYS_KEY, {self.gateway: self._now() + int(self.ttl_s * 1000)})
        self._registered = True

    async def opened(self, table_id: str, player_id: str, stream: str) -> bool:
        """Record `stream`; True when the player had no other live stream to the table."""
        if not self._registered:
            await self._register()
        gateway = self.gateway
        self.mine[stream] = (table_id, player_id, gateway)
        await self.redis.sadd(streams_key(gateway), _stream_member(table_id, player_id, stream))
        keys, member = [_pair_key(table_id, player_id)], f"{gateway}\0{stream}"
        first = await evalsha(self.redis, self._open, keys, [member])
        if self.mine.get(stream) != (table_id, player_id, gateway):
            # Closed while it opened: undo, or it would outlive the stream.
            await self._close(gateway, table_id, player_id, stream)
            return False
        return bool(first)

    async def closed(self, table_id: str, player_id: str, stream: str) -> bool:
        """Forget `stream`; True when it was the player's last live stream to the table."""
        _, _, gateway = self.mine.pop(stream, (table_id, player_id, self.gateway))
        return await self._close(gateway, table_id, player_id, stream)

    async def _close(self, gateway: str, table_id: str, player_id: str, stream: str) -> bool:
        keys, member = [_pair_key(table_id, player_id)], f"{gateway}\0{stream}"
        last = bool(await evalsha(self.redis, self._close_script, keys, [member]))
        await self.redis.srem(streams_key(gateway), _stream_member(table_id, player_id, stream))
        return last

    async def renew_all(self) -> list[tuple[str, str, str]]:
        """Extend this gateway's lease (one call). When it had lapsed (this gateway stalled past
        the TTL and a sweeper may have reported its players away), take a new id and return the
        live streams: the caller opens them again under it (`reopen`) and reports them back."""
        if not self._registered:
            await self._register()
            return []
        now = self._now()
        args = [self.gateway, now + int(self.ttl_s * 1000), now]
        if await evalsha(self.redis, self._renew, [GATEWAYS_KEY], args):
            return []
        log.warning("this gateway's presence lease lapsed; opening its streams again")
        self.gateway = uuid.uuid4().hex[:16]
        await self._register()
        return [
            (table_id, player_id, stream) for stream, (table_id, player_id, _) in self.mine.items()
        ]

    async def reopen(self, table_id: str, player_id: str, stream: str) -> bool:
        """A live stream of a lapsed lease, under this gateway's new id; True when that reports
        a connect (a sweeper had reported the player away)."""
        held = self.mine.get(stream)
        if held is None or held[2] == self.gateway:
            return False  # closed meanwhile, or opened under the new lease already
        first = await self.opened(table_id, player_id, stream)
        # Opened under the new id first, so closing the old member reports nothing.
        await self._close(held[2], table_id, player_id, stream)
        return first

    async def expired(self, limit: int = SWEEP_BATCH) -> list[tuple[str, str]]:
        """Close the streams of gateways whose lease lapsed (they died), at most `limit` per
        call; returns the (table, player) pairs that lost their last live stream: disconnects
        the caller must report. A dead gateway with nothing left is forgotten."""
        now = self._now()
        dead = await self.redis.zrangebyscore(GATEWAYS_KEY, "-inf", now - 1, start=0, num=10)
        gone = []
        for raw in dead:
            gateway = raw.decode() if isinstance(raw, bytes) else str(raw)
            members = await self.redis.srandmember(streams_key(gateway), limit)
            for item in members:
                member = item.decode() if isinstance(item, bytes) else str(item)
                table_id, player_id, stream = member.split("\0")
                if await self._close(gateway, table_id, player_id, stream):
                    gone.append((table_id, player_id))
            limit -= len(members)
            if not members:
                await evalsha(self.redis, self._forget, [GATEWAYS_KEY], [gateway, now])
            if limit <= 0:
                break
        return gone

    async def run(
        self, report: Callable[[str, str, bool], Awaitable[None]], stop: asyncio.Event
    ) -> None:
        """Renew this gateway's lease and sweep lapsed gateways' streams, every `ttl_s / 3`."""
        while not stop.is_set():
            try:
                for table_id, player_id, stream in await self.renew_all():
                    if await self.reopen(table_id, player_id, stream):
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
