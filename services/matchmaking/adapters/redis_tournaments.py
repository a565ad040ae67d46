"""Tournaments' state on Redis: `TournamentRepository` (services/matchmaking/ports.py).

A tournament's document is one JSON value at `lobby:{lobby}:tn:<id>`, changed by compare-and-set
like a table's; `lobby:{lobby}:tournaments` lists them by creation and
`lobby:{lobby}:tournaments:unfinished` holds the ones the director still drives, all in the
lobby's hash slot. A player's one unfinished tournament is `tournament:player:{<player>}`."""

from __future__ import annotations

from typing import Any

from services.common.connections import evalsha, reply_text
from services.contracts.redis_keys import TOURNAMENTS as INDEX
from services.contracts.redis_keys import UNFINISHED_TOURNAMENTS as UNFINISHED
from services.contracts.redis_keys import tournament_key as _doc_key
from services.contracts.redis_keys import tournament_player_key as _player_key
from services.matchmaking.adapters.redis_lobby import RELEASE_SCRIPT

KEEP_S = 30 * 86_400  # a finished tournament stays readable a month

# An unfinished tournament's document never expires: its players' buy-ins wait on it (a
# sit-and-go may register for weeks). Finished, it expires KEEP_S later.

# KEYS: the document, the index, the unfinished set. ARGV: the document, its id, created_ms,
# the index's cut-off. One script: no crash leaves a document the director does not drive.
_CREATE = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
redis.call('SADD', KEYS[3], ARGV[2])
return 1
"""

# KEYS: the document, the unfinished set. ARGV: as read, as changed, TTL, its id.
_SAVE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('SISMEMBER', KEYS[2], ARGV[4]) == 1 then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
end
return 1
"""

# A player's claim (their one unfinished tournament), as the lobby's holds but without expiry:
# it lasts as long as the tournament, which frees it at its end; a claim left behind is taken
# over at the next registration (its tournament no longer holds the player).
# KEYS: the player's key. ARGV: the tournament, the claim it may replace.
_CLAIM = """
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] and held ~= ARGV[2] then return held end
redis.call('SET', KEYS[1], ARGV[1])
return false
"""

# KEYS: the document, the unfinished set. ARGV: its id, TTL.
_FINISH = """
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""


class RedisTournamentStore:
    def __init__(self, redis: Any) -> None:  # redis-py's async client: untyped
        self.redis = redis
        self._create = redis.register_script(_CREATE)
        self._save = redis.register_script(_SAVE)
        self._finish = redis.register_script(_FINISH)
        self._claim = redis.register_script(_CLAIM)
        self._release = redis.register_script(RELEASE_SCRIPT)

    async def read(self, tournament_id: str) -> str | None:
        raw = await self.redis.get(_doc_key(tournament_id))
        return None if raw is None else reply_text(raw)

    async def read_many(self, tournament_ids: list[str]) -> list[str | None]:
        if not tournament_ids:
            return []
        found = await self.redis.mget([_doc_key(t) for t in tournament_ids])  # one slot
        return [None if raw is None else reply_text(raw) for raw in found]

    async def create(self, tournament_id: str, doc: str, created_ms: int) -> bool:
        keys = [_doc_key(tournament_id), INDEX, UNFINISHED]
        args = [doc, tournament_id, created_ms, created_ms - KEEP_S * 1000]  # cut: expired ones
        return bool(await evalsha(self.redis, self._create, keys, args))

    async def save_if_unchanged(self, tournament_id: str, read: str, doc: str) -> bool:
        keys = [_doc_key(tournament_id), UNFINISHED]
        args = [read, doc, KEEP_S, tournament_id]
        return bool(await evalsha(self.redis, self._save, keys, args))

    async def newest(self, limit: int) -> list[str]:
        return [reply_text(r) for r in await self.redis.zrevrange(INDEX, 0, limit - 1)]

    async def unfinished(self) -> list[str]:
        return sorted(reply_text(r) for r in await self.redis.smembers(UNFINISHED))

    async def mark_finished(self, tournament_id: str) -> None:
        keys = [_doc_key(tournament_id), UNFINISHED]
        await evalsha(self.redis, self._finish, keys, [tournament_id, KEEP_S])

    async def claim_player(self, player_id: str, tournament_id: str, replace: str) -> str | None:
        args = [tournament_id, replace]
        held = await evalsha(self.redis, self._claim, [_player_key(player_id)], args)
        return None if not held else reply_text(held)

    async def release_player(self, player_id: str, tournament_id: str) -> None:
        await evalsha(self.redis, self._release, [_player_key(player_id)], [tournament_id])

    async def player_tournament(self, player_id: str) -> str | None:
        raw = await self.redis.get(_player_key(player_id))
        return None if raw is None else reply_text(raw)
