"""Presence's state: the port presence works through (`PresenceRepository`) and its Redis
implementation. The unit tests run presence on an in-memory one
(tests/gateway/memory_presence.py), held to this one by a contract test.

Gateway leases are one sorted set, `presence:gateways` (gateway id -> expiry ms). Each open
stream is a member "<gateway>\\0<stream>" of its (table, player) set
`presence:{s<n>}:<table>:<player>` (the table's shard hash tag, so each script touches one Redis
Cluster slot) and a member "<table>\\0<player>\\0<stream>" of its gateway's set
`presence:streams:{<gateway>}`, written first so a gateway that dies mid-open leaves nothing
unswept, and "<table>\\0<gateway>\\0<stream>" of the player's set `presence:player:{<player>}`
(where a player is, for their followers: services/identity/adapters/redis_presence.py reads
it). Each transition (first member in, last member out, a renewal, forgetting a lapsed
gateway) is decided by one Lua script, so exactly one caller sees it."""

from __future__ import annotations

from typing import Any

from services.common.connections import evalsha, reply_text
from services.contracts.redis_keys import PRESENCE_GATEWAYS as GATEWAYS_KEY
from services.contracts.redis_keys import presence_pair_key as _pair_key
from services.contracts.redis_keys import presence_player_key as _player_key
from services.contracts.redis_keys import presence_streams_key as streams_key
from services.gateway.ports import Stream

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


class RedisPresenceStore:
    def __init__(self, redis: Any) -> None:  # redis-py's async client: untyped
        self.redis = redis
        self._open = redis.register_script(_OPEN)
        self._close = redis.register_script(_CLOSE)
        self._renew = redis.register_script(_RENEW)
        self._forget = redis.register_script(_FORGET)

    async def take_lease(self, gateway: str, expiry_ms: int) -> None:
        await self.redis.zadd(GATEWAYS_KEY, {gateway: expiry_ms})

    async def renew_lease(self, gateway: str, expiry_ms: int, now_ms: int) -> bool:
        args = [gateway, expiry_ms, now_ms]
        return bool(await evalsha(self.redis, self._renew, [GATEWAYS_KEY], args))

    async def lapsed_gateways(self, now_ms: int, limit: int) -> list[str]:
        found = await self.redis.zrangebyscore(GATEWAYS_KEY, "-inf", now_ms - 1, start=0, num=limit)
        return [reply_text(raw) for raw in found]

    async def forget(self, gateway: str, now_ms: int) -> None:
        await evalsha(self.redis, self._forget, [GATEWAYS_KEY], [gateway, now_ms])

    async def open_stream(self, gateway: str, table_id: str, player_id: str, stream: str) -> bool:
        await self.redis.sadd(streams_key(gateway), f"{table_id}\0{player_id}\0{stream}")
        await self.redis.sadd(_player_key(player_id), f"{table_id}\0{gateway}\0{stream}")
        keys, member = [_pair_key(table_id, player_id)], f"{gateway}\0{stream}"
        return bool(await evalsha(self.redis, self._open, keys, [member]))

    async def close_stream(self, gateway: str, table_id: str, player_id: str, stream: str) -> bool:
        keys, member = [_pair_key(table_id, player_id)], f"{gateway}\0{stream}"
        last = bool(await evalsha(self.redis, self._close, keys, [member]))
        await self.redis.srem(_player_key(player_id), f"{table_id}\0{gateway}\0{stream}")
        await self.redis.srem(streams_key(gateway), f"{table_id}\0{player_id}\0{stream}")
        return last

    async def streams_of(self, gateway: str, limit: int) -> list[Stream]:
        found = await self.redis.srandmember(streams_key(gateway), limit)
        out: list[Stream] = []
        for raw in found:
            table_id, player_id, stream = reply_text(raw).split("\0")
            out.append((table_id, player_id, stream))
        return out
