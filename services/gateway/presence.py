"""Presence as gateway leases: which players have a live Play stream to a table, across gateways.

Each gateway process holds one lease, renewed every `ttl_s / 3` with one call however many
streams it serves, and records each open stream under it (kept by
services/gateway/adapters/redis_presence.py). The first stream of a (table, player) reports a
connect, the last one to go a disconnect; the store decides each transition atomically, so
exactly one caller reports it.

A gateway that dies stops renewing: after `ttl_s` any gateway's sweeper closes the streams
recorded under it (reporting the disconnects, so the away rule, 60 s, I-8, starts even when
nobody closed the stream) and then forgets it. A gateway that stalled past its lease finds it gone
when it next renews: it takes a new id and opens its live streams again under it (reporting the
connects the sweeper undid), so nothing the sweeper does to the old id touches them.

A Friends stream is recorded the same way under the table LOBBY, so a player's followers see
them online (services/identity/friends.py reads it); no table is told of it.

(Per-stream leases, renewed one call per stream, cost a gateway 2,000 calls a second at 10,000
streams; this costs one.)
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from services.common.backoff import pause
from services.common.clock import now_ms
from services.contracts.redis_keys import PRESENCE_LOBBY as LOBBY  # no table hears of it
from services.gateway.ports import PresenceRepository

log = logging.getLogger("bg.gateway.presence")

SWEEP_BATCH = 500  # streams of dead gateways closed per sweep
SWEEP_GATEWAYS = 10  # dead gateways looked at per sweep


class Presence:
    def __init__(
        self, store: PresenceRepository, ttl_s: float = 15.0, clock: Callable[[], int] = now_ms
    ) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._now = clock
        self.gateway = uuid.uuid4().hex[:16]  # this process's lease; a new one after a lapse
        # This gateway's live streams: stream -> (table, player, the gateway id it opened under).
        self.mine: dict[str, tuple[str, str, str]] = {}
        # Streams that ended while the store could not be told (this gateway cut off from
        # Valkey): each round closes them, so their players' disconnects are still reported.
        self.unclosed: dict[str, tuple[str, str, str]] = {}
        self._registered = False

    async def _register(self) -> None:
        """Take this gateway's lease (before its first stream, so sweepers can find them)."""
        await self.store.take_lease(self.gateway, self._now() + int(self.ttl_s * 1000))
        self._registered = True

    async def opened(self, table_id: str, player_id: str, stream: str) -> bool:
        """Record `stream`; True when the player had no other live stream to the table."""
        if not self._registered:
            await self._register()
        gateway = self.gateway
        self.mine[stream] = (table_id, player_id, gateway)
        first = await self.store.open_stream(gateway, table_id, player_id, stream)
        if self.mine.get(stream) != (table_id, player_id, gateway):
            # Closed while it opened: undo, or it would outlive the stream.
            await self.store.close_stream(gateway, table_id, player_id, stream)
            return False
        return first

    async def closed(self, table_id: str, player_id: str, stream: str) -> bool:
        """Forget `stream`; True when it was the player's last live stream to the table. When
        the store cannot be told (False here), a later round of `run` closes it and reports the
        disconnect: it never fails, so a stream's end, in a task of its own or shielded, leaves
        no unretrieved error."""
        _, _, gateway = self.mine.pop(stream, (table_id, player_id, self.gateway))
        try:
            return await self.store.close_stream(gateway, table_id, player_id, stream)
        except Exception as exc:  # Redis away: this gateway's loop closes it when it answers
            self.unclosed[stream] = (table_id, player_id, gateway)
            log.warning(
                "a stream's end not yet recorded",
                extra={"table_id": table_id, "error": repr(exc)[:200]},
            )
            return False

    async def close_unclosed(self) -> list[tuple[str, str]]:
        """Close the streams that ended while the store was away; the (table, player) pairs
        that lost their last live stream (disconnects the caller must report). A lease that
        lapsed meanwhile had them closed by a sweeper: the store then reports nothing twice."""
        gone = []
        for stream, (table_id, player_id, gateway) in list(self.unclosed.items()):
            last = await self.store.close_stream(gateway, table_id, player_id, stream)
            del self.unclosed[stream]
            if last:
                gone.append((table_id, player_id))
        return gone

    async def renew_all(self) -> list[tuple[str, str, str]]:
        """Extend this gateway's lease (one call). When it had lapsed (this gateway stalled past
        the TTL and a sweeper may have reported its players away), take a new id and return the
        live streams: the caller opens them again under it (`reopen`) and reports them back."""
        if not self._registered:
            await self._register()
            return []
        now = self._now()
        if await self.store.renew_lease(self.gateway, now + int(self.ttl_s * 1000), now):
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
        await self.store.close_stream(held[2], table_id, player_id, stream)
        return first

    async def expired(self, limit: int = SWEEP_BATCH) -> list[tuple[str, str]]:
        """Close the streams of gateways whose lease lapsed (they died), at most `limit` per
        call; returns the (table, player) pairs that lost their last live stream: disconnects
        the caller must report. A dead gateway with nothing left is forgotten."""
        now = self._now()
        gone = []
        for gateway in await self.store.lapsed_gateways(now, SWEEP_GATEWAYS):
            streams = await self.store.streams_of(gateway, limit)
            for table_id, player_id, stream in streams:
                if await self.store.close_stream(gateway, table_id, player_id, stream):
                    gone.append((table_id, player_id))
            limit -= len(streams)
            if not streams:
                await self.store.forget(gateway, now)
            if limit <= 0:
                break
        return gone

    async def run(
        self, report: Callable[[str, str, bool], Awaitable[object]], stop: asyncio.Event
    ) -> None:
        """Renew this gateway's lease and sweep lapsed gateways' streams, every `ttl_s / 3`."""
        while not stop.is_set():
            try:
                for table_id, player_id in await self.close_unclosed():
                    if table_id != LOBBY:
                        await report(table_id, player_id, False)
                for table_id, player_id, stream in await self.renew_all():
                    if await self.reopen(table_id, player_id, stream) and table_id != LOBBY:
                        await report(table_id, player_id, True)
                for table_id, player_id in await self.expired():
                    if table_id == LOBBY:
                        continue
                    log.info(
                        "a stream's gateway went away: player disconnected",
                        extra={"table_id": table_id, "player_id": player_id},
                    )
                    await report(table_id, player_id, False)
            except Exception as exc:  # Redis down: next round
                log.warning("presence round failed", extra={"error": repr(exc)[:300]})
            await pause(stop, self.ttl_s / 3)
