"""Players who keep their matches from spectators (I-35's opt-out), a preference that follows
the player (I-33): one key per player in Redis, read by every gateway before anyone watches."""

from __future__ import annotations

from typing import Any

from services.contracts.redis_keys import private_prefs_key as _key


class Privacy:
    def __init__(self, redis: Any) -> None:
        self.redis = redis

    async def set(self, player_id: str, hidden: bool) -> None:
        if hidden:
            await self.redis.set(_key(player_id), "1")
        else:
            await self.redis.delete(_key(player_id))

    async def any_hidden(self, player_ids: list[str]) -> bool:
        """Whether a player of these keeps their matches from spectators."""
        people = [p for p in player_ids if p]
        if not people:
            return False
        async with self.redis.pipeline(transaction=False) as pipe:
            for player_id in people:
                pipe.exists(_key(player_id))
            return any(await pipe.execute())
