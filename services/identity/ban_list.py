"""The live ban list every gateway checks (services/gateway/bans.py reads it): the players in
`{bans}:banned` and a counter `{bans}:v` bumped on every change, so a gateway reads the set again
only when it moved. The record is this service's SQL (`bans`); Redis holds what is derived
from it, which each gateway puts back at its start should Redis have lost it."""

from __future__ import annotations

from typing import Any

from services.contracts.redis_keys import BANNED, RESTRICTED
from services.contracts.redis_keys import BANS_VERSION as VERSION


class BanList:
    def __init__(self, redis: Any) -> None:
        self.redis = redis

    async def ban(self, player_id: str) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.sadd(BANNED, player_id)
        pipe.incr(VERSION)
        await pipe.execute()

    async def unban(self, player_id: str) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.srem(BANNED, player_id)
        pipe.incr(VERSION)
        await pipe.execute()

    # Restrictions to casual unrated play (issue 61): matchmaking reads the set at each staked or
    # ranked seat and deal, so a restriction holds at once for every gateway's players.

    async def restrict(self, player_id: str) -> None:
        await self.redis.sadd(RESTRICTED, player_id)

    async def unrestrict(self, player_id: str) -> None:
        await self.redis.srem(RESTRICTED, player_id)

    async def restore_restricted(self, player_ids: list[str]) -> None:
        """The record's restrictions put back (a flushed Redis), at the service's start."""
        if player_ids:
            await self.redis.sadd(RESTRICTED, *player_ids)
