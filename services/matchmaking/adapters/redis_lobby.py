"""The lobby's state on Redis: `LobbyRepository` (services/matchmaking/ports.py). The unit tests
run the lobby on an in-memory one (tests/matchmaking/memory_lobby.py), held to this one by a
contract test.

A table's document is one JSON value at `lobby:{lobby}:t:<id>`, changed by compare-and-set (a
script writes it only if it is still what was read, and keeps the open and dealing indexes):
two players racing for the last seat cannot both get it. The `{lobby}` hash tag puts the
documents and the indexes in one Redis Cluster slot, so the script is legal there; party codes,
quick-match queues, scored pairings and the per-player sets are single keys and spread over the
cluster."""

from __future__ import annotations

from typing import Any

from services.common.connections import evalsha, reply_text
from services.contracts.redis_keys import (
    BOT_TABLES,
    RESTRICTED,
    lobby_hold_key,
    lobby_key,
    lobby_player_key,
    party_code_key,
    scored_table_key,
)
from services.contracts.redis_keys import DEALING_TABLES as DEALING_SET
from services.contracts.redis_keys import LIVE_TABLES as LIVE_SET
from services.contracts.redis_keys import OPEN_TABLES as OPEN_SET
from services.matchmaking.ports import HoldKind, PlayerSet

LOBBY_TTL_S = 86_400  # a lobby document lives a day after its last change

# KEYS: the document, OPEN_SET, DEALING_SET. ARGV: the document as read, as changed, its TTL,
# the table id, its open-index score ("" = not listed), its dealing-index score ("" = not
# dealing). Writes only if nobody changed the document since it was read; returns 1 if written.
_SAVE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[2], ARGV[5], ARGV[4])
else redis.call('ZREM', KEYS[2], ARGV[4]) end
if ARGV[6] ~= '' then redis.call('ZADD', KEYS[3], ARGV[6], ARGV[4])
else redis.call('ZREM', KEYS[3], ARGV[4]) end
return 1
"""

# KEYS[1]: a player's key. ARGV: the value to set, the value it may replace ("" = none), ttl s.
# Sets it if it is unset, equal to ARGV[2] or already ARGV[1]; returns nil then, else the value
# that holds it.
HOLD_SCRIPT = """
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] and held ~= ARGV[2] then return held end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
return false
"""
# KEYS[1]: a player's key. ARGV[1]: the value. Deletes it only if it still holds that value.
RELEASE_SCRIPT = "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end"

_ENQUEUE_IF_EMPTY = (
    "if redis.call('LLEN', KEYS[1]) > 0 then return 0 end "
    "redis.call('RPUSH', KEYS[1], ARGV[1]) return 1"
)


def _player_key(kind: PlayerSet, player_id: str) -> str:
    """In the player's own slot (Redis Cluster)."""
    return lobby_player_key(kind, player_id)


class RedisLobbyStore:
    def __init__(self, redis: Any) -> None:
        self.redis = redis
        self._save = redis.register_script(_SAVE)
        self._hold = redis.register_script(HOLD_SCRIPT)
        self._release = redis.register_script(RELEASE_SCRIPT)

    async def read(self, table_id: str) -> str | None:
        raw = await self.redis.get(lobby_key(table_id))
        return None if raw is None else reply_text(raw)

    async def create(self, table_id: str, doc: str, open_since_ms: int | None) -> None:
        await self.redis.set(lobby_key(table_id), doc, ex=LOBBY_TTL_S)
        if open_since_ms is not None:
            await self.redis.zadd(OPEN_SET, {table_id: open_since_ms})

    async def create_if_absent(self, table_id: str, doc: str) -> bool:
        return bool(await self.redis.set(lobby_key(table_id), doc, ex=LOBBY_TTL_S, nx=True))

    async def save_if_unchanged(
        self,
        table_id: str,
        read: str,
        doc: str,
        open_since_ms: int | None,
        dealing_since_ms: int | None,
    ) -> bool:
        args = [
            read,
            doc,
            LOBBY_TTL_S,
            table_id,
            "" if open_since_ms is None else open_since_ms,
            "" if dealing_since_ms is None else dealing_since_ms,
        ]
        keys = [lobby_key(table_id), OPEN_SET, DEALING_SET]
        return bool(await evalsha(self.redis, self._save, keys, args))

    async def reserve_code(self, code: str, table_id: str, ttl_s: int) -> bool:
        return bool(await self.redis.set(party_code_key(code), table_id, nx=True, ex=ttl_s))

    async def code_table(self, code: str) -> str | None:
        raw = await self.redis.get(party_code_key(code))
        return None if raw is None else reply_text(raw)

    async def add_player_table(self, kind: PlayerSet, player_id: str, table_id: str) -> None:
        await self.redis.sadd(_player_key(kind, player_id), table_id)
        await self.redis.expire(_player_key(kind, player_id), LOBBY_TTL_S)

    async def player_tables(self, kind: PlayerSet, player_id: str) -> list[str]:
        return sorted(
            reply_text(r) for r in await self.redis.smembers(_player_key(kind, player_id))
        )

    async def drop_player_table(self, kind: PlayerSet, player_id: str, table_id: str) -> None:
        await self.redis.srem(_player_key(kind, player_id), table_id)

    async def open_tables(self, limit: int) -> list[str]:
        return [reply_text(r) for r in await self.redis.zrevrange(OPEN_SET, 0, limit - 1)]

    async def drop_open(self, table_id: str) -> None:
        await self.redis.zrem(OPEN_SET, table_id)

    async def mark_live(self, table_id: str, at_ms: int) -> None:
        await self.redis.zadd(LIVE_SET, {table_id: at_ms})

    async def live_tables(self, since_ms: int, limit: int) -> list[str]:
        await self.redis.zremrangebyscore(LIVE_SET, "-inf", f"({since_ms}")
        return [reply_text(r) for r in await self.redis.zrevrange(LIVE_SET, 0, limit - 1)]

    async def drop_live(self, table_id: str) -> None:
        await self.redis.zrem(LIVE_SET, table_id)

    async def dealing_before(self, cutoff_ms: int, limit: int) -> list[str]:
        found = await self.redis.zrangebyscore(DEALING_SET, "-inf", cutoff_ms, start=0, num=limit)
        return [reply_text(r) for r in found]

    async def drop_dealing(self, table_id: str) -> None:
        await self.redis.zrem(DEALING_SET, table_id)

    async def pop_waiting(self, queue: str) -> str | None:
        raw = await self.redis.lpop(queue)
        return None if raw is None else reply_text(raw)

    async def push_waiting(self, queue: str, table_id: str) -> None:
        await self.redis.rpush(queue, table_id)

    async def enqueue_if_empty(self, queue: str, table_id: str) -> bool:
        return bool(await self.redis.eval(_ENQUEUE_IF_EMPTY, 1, queue, table_id))

    async def add_bot_table(self, table_id: str) -> None:
        await self.redis.sadd(BOT_TABLES, table_id)

    async def scored_table(self, player_id: str) -> str | None:
        raw = await self.redis.get(scored_table_key(player_id))
        return None if raw is None else reply_text(raw)

    async def set_scored_table(self, player_id: str, table_id: str, ttl_s: int) -> None:
        await self.redis.set(scored_table_key(player_id), table_id, ex=ttl_s)

    async def clear_scored_table(self, player_id: str) -> None:
        await self.redis.delete(scored_table_key(player_id))

    async def hold(
        self, kind: HoldKind, player_id: str, key: str, value: str, replacing: str, ttl_s: int
    ) -> str | None:
        held = await evalsha(
            self.redis, self._hold, [_hold_key(kind, player_id, key)], [value, replacing, ttl_s]
        )
        return None if held is None else reply_text(held)

    async def release(self, kind: HoldKind, player_id: str, key: str, value: str) -> None:
        await evalsha(self.redis, self._release, [_hold_key(kind, player_id, key)], [value])

    async def held(self, kind: HoldKind, player_id: str, key: str) -> str | None:
        raw = await self.redis.get(_hold_key(kind, player_id, key))
        return None if raw is None else reply_text(raw)

    async def restricted(self, player_ids: list[str]) -> list[str]:
        people = [p for p in player_ids if p]
        if not people:
            return []
        found = await self.redis.smismember(RESTRICTED, people)
        return [p for p, held in zip(people, found, strict=True) if held]


def _hold_key(kind: HoldKind, player_id: str, key: str) -> str:
    """In the player's own slot (Redis Cluster)."""
    return lobby_hold_key(kind, player_id, key)
