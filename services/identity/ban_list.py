"""The live ban list every gateway checks (services/gateway/bans.py reads it): the players in
`{bans}:banned` and a counter `{bans}:v` bumped on every change, so a gateway reads the set again
only when it moved. The record is this service's SQL (`bans`); Redis holds what is derived
from it, which each gateway puts back at its start should Redis have lost it."""

from __future__ import annotations

from typing import Any

from services.contracts.redis_keys import BANNED
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
