"""Who is banned, as every gateway replica sees it within BG_BAN_SYNC_S.

The identity service holds the record (its `bans` table); Redis holds the live set every replica
checks: `bg:banned` (the players) and `bg:banned:v` (a counter bumped on every change). Each
replica keeps the set in memory, so the check on every call is a set lookup, and looks at the
counter every `sync_s` (one GET), reading the set again only when it moved; `on_ban` ends a
newly banned player's live streams here. The identity service writes the set
(services/identity/ban_list.py) as an operator bans or lifts a ban.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError

from services.common.backoff import pause
from services.common.connections import reply_text
from services.common.errors import ServiceError
from services.contracts.redis_keys import BANNED
from services.contracts.redis_keys import BANS_VERSION as VERSION

log = logging.getLogger("bg.gateway.bans")


class Bans:
    def __init__(
        self,
        redis: Any,
        sync_s: float = 0.5,
        on_ban: Callable[[str], None] = lambda player_id: None,
    ) -> None:
        self.redis = redis
        self.sync_s = sync_s
        self._banned: set[str] = set()
        self._version: bytes | None = None
        self._to_restore: list[str] = []
        self.on_ban = on_ban  # a ban seen here (this gateway's, or another's at a sync)

    def banned(self, player_id: str) -> bool:
        return player_id in self._banned

    async def seed_from(
        self,
        record: Callable[[], Awaitable[list[str]]],
        stop: asyncio.Event,
        every_s: float = 1.0,
        most_s: float = 30.0,
    ) -> None:
        """At start, the record's bans (the identity service's), asked for until it answers
        (it may start after this gateway; the wait doubles up to `most_s`, so a long outage
        logs a line every half minute, not every second): then `seed`."""
        wait = every_s
        while not stop.is_set():
            try:
                self.seed(await record())
                return
            except ServiceError as err:
                log.warning("bans not read from the record yet", extra={"error": err.code})
            await pause(stop, wait)
            wait = min(most_s, wait * 2)

    def seed(self, player_ids: list[str]) -> None:
        """The record's bans: enforced here at once, and put back into Redis (derived state,
        which a flush may have lost) as soon as Redis answers."""
        self._to_restore = list(player_ids)
        self._apply(self._banned | set(player_ids))

    async def restore(self) -> None:
        if self._to_restore:
            await self.redis.sadd(BANNED, *self._to_restore)
            await self.redis.incr(VERSION)
            self._to_restore = []

    async def sync(self) -> None:
        version = await self.redis.get(VERSION)
        if version == self._version and version is not None:
            return
        members = await self.redis.smembers(BANNED)
        self._version = version
        self._apply({reply_text(m) for m in members})

    def _apply(self, banned: set[str]) -> None:
        new = banned - self._banned
        self._banned = banned
        for player_id in new:
            self.on_ban(player_id)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.restore()
                await self.sync()
            except (RedisError, OSError) as exc:  # keep the last known set; try again
                log.warning("ban sync failed", extra={"error": repr(exc)})
            await pause(stop, self.sync_s)
