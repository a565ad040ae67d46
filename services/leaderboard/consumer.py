"""Consumes table-events, wallet-events and tournament-events into the boards, archiving what it
applies (every finished match with its moves, every wallet event, every tournament's result);
`rebuild` and `replay_player` replay that archive: the topics' history is bounded
(services/common/embedded_generations.py), the archive is not."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bg.events.v1 import events_pb2
from services.common import event_log
from services.common.log_port import Incoming, Reader
from services.contracts.event_records import table_events
from services.contracts.topics import TABLE_EVENTS, TOURNAMENT_EVENTS
from services.leaderboard import boards
from services.leaderboard.effects import (
    Effects,
    table_effects,
    tournament_effects,
    wallet_effects,
)
from services.leaderboard.ports import BoardRepository

log = logging.getLogger("bg.leaderboard")


class EventHandler:
    """One event in: decoded, its effects worked out, applied to the boards once."""

    def __init__(
        self, store: BoardRepository, season_ms: int = boards.WEEK_MS, metrics: Any = None
    ) -> None:
        self.store = store
        self.season_ms = season_ms
        self.metrics = metrics

    async def handle(self, topic: str, raw: bytes) -> str:
        """One serialized event of a logical topic."""
        return (await self.handle_record(topic, raw, None))[0]

    async def handle_record(self, topic: str, value: bytes, headers: Any) -> list[str]:
        """A Kafka record of a logical topic: a table commit's events (or one table event from
        an earlier release), or one wallet event."""
        try:
            if topic == TABLE_EVENTS:
                return [await self.handle_event(e) for e in table_events(value, headers)]
            if topic == TOURNAMENT_EVENTS:
                return [await self.handle_result(events_pb2.TournamentEvent.FromString(value))]
            w_event = events_pb2.WalletEvent()
            w_event.ParseFromString(value)
        except Exception:
            log.error("undecodable event skipped", extra={"topic": topic, "size": len(value)})
            return [self._count("undecodable", "undecodable")]
        kind = f"wallet_{w_event.kind}"
        fx = wallet_effects(w_event, self.season_ms)
        if fx.deltas or fx.rated:
            await self.store.archive_wallet(w_event)  # the record a rebuild replays
        if not fx.deltas and not fx.rated:
            return [self._count(kind, "ignored")]
        applied = await self.store.apply(w_event.event_id, w_event.at_ms, fx)
        return [self._count(kind, "applied" if applied else "duplicate")]

    async def handle_event(self, t_event: events_pb2.TableEvent) -> str:
        kind = t_event.WhichOneof("body") or "other"
        fx: Effects = table_effects(t_event, self.season_ms)
        if kind in ("match_ended", "match_closed"):
            await self.store.archive(t_event)  # the match history players keep
        if not fx.deltas and not fx.rated:
            return self._count(kind, "ignored")
        applied = await self.store.apply(t_event.event_id, t_event.at_ms, fx)
        return self._count(kind, "applied" if applied else "duplicate")

    async def handle_result(self, result: events_pb2.TournamentEvent) -> str:
        """A finished tournament: archived with its ranks, its champion's win counted once."""
        await self.store.archive_tournament(result)
        fx = tournament_effects(result, self.season_ms)
        if not fx.deltas:
            return self._count("tournament_result", "ignored")
        applied = await self.store.apply(result.event_id, result.at_ms, fx)
        return self._count("tournament_result", "applied" if applied else "duplicate")

    def _count(self, kind: str, result: str) -> str:
        if self.metrics is not None:
            self.metrics.consumed.labels(kind, result).inc()
        return result


async def consume(
    handler: EventHandler, reader: Reader, stop: asyncio.Event, lag: Any = None
) -> None:
    """Consume the leaderboard's topics until `stop` (event_log.consume_records), its lag kept."""

    async def handle(record: Incoming) -> object:
        return await handler.handle_record(record.logical, record.value, record.headers)

    await event_log.consume_records(reader, handle, stop, lag=lag)


async def rebuild(handler: EventHandler, source: BoardRepository | None = None) -> int:
    """Empty the boards, then apply the archive again (`source`'s, by default the handler's own
    store's), oldest first. Returns the events applied."""
    archive = await (source or handler.store).archived_events()
    await handler.store.reset()
    applied = 0
    for topic, raw in archive:
        applied += sum(r == "applied" for r in await _replay(handler, topic, raw))
    await handler.store.resync()
    return applied


async def replay_player(handler: EventHandler, player_id: str) -> dict[str, int]:
    """Apply again every archived event of one player: the store takes each event id once, so
    what was applied stays as it is and only what was missed lands (a crash between the archive
    and the boards, say)."""
    counts = {"events": 0, "applied": 0, "duplicates": 0}
    for topic, raw in await handler.store.archived_events(player_id):
        for result in await _replay(handler, topic, raw):
            counts["events"] += 1
            if result in ("applied", "duplicate"):
                counts["applied" if result == "applied" else "duplicates"] += 1
    return counts


async def _replay(handler: EventHandler, topic: str, raw: bytes) -> list[str]:
    """An archived event applied again; a match's with the games among its moves first."""
    if topic != TABLE_EVENTS:
        return await handler.handle_record(topic, raw, None)
    end = events_pb2.TableEvent()
    end.ParseFromString(raw)
    body = getattr(end, end.WhichOneof("body") or "", None)
    games = [m for m in getattr(body, "moves", []) if m.WhichOneof("body") == "game_ended"]
    return [await handler.handle_event(e) for e in (*games, end)]
