"""Settles or refunds wagered matches from `table-events`, idempotently, and captures the holds
of taken doubles and applied boosts.

The idempotency keys come from services/contracts/money_keys.py (`settle:<match>`,
`refund:<match>`, `capture:<hold>`), shared with the table service and the reconciler, so
duplicate and reordered deliveries, a replay of the whole topic, and the other paths do each
thing exactly once; whichever of settle or refund comes first wins, the other is skipped.
Events of one table arrive in order (one partition; across an embedded log's generations the
table relay keeps the order), so a take or a boost is captured before its match settles;
settlement releases whatever hold is still open.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bg.events.v1 import events_pb2
from services.common import event_log
from services.common.errors import ServiceError
from services.common.log_port import Incoming, Reader
from services.contracts import money_keys
from services.contracts.event_records import table_events
from services.wallet.ledger import Ledger
from services.wallet.metrics import WalletMetrics

log = logging.getLogger("bg.wallet.consumer")
# The kinds of table events the wallet acts on: a record holding none of them is not decoded.
WANTED = frozenset({"match_ended", "match_closed", "double_taken", "boost_applied"})


class TableEventsHandler:
    def __init__(self, ledger: Ledger, metrics: WalletMetrics | None = None) -> None:
        self.ledger = ledger
        self.metrics = metrics

    async def handle(self, raw: bytes) -> str:
        """Apply one serialized table event; returns what happened (for metrics and tests)."""
        event = events_pb2.TableEvent()
        try:
            event.ParseFromString(raw)
        except Exception:
            # Not retryable: the bytes will never decode. Loud, counted, and skipped.
            log.error("undecodable table event skipped", extra={"size": len(raw)})
            return self._count("undecodable", "undecodable")
        return await self.handle_event(event)

    async def handle_record(self, value: bytes, headers: Any) -> list[str]:
        """A Kafka record: one commit's events (or one event, from earlier releases). A record
        whose kinds header names nothing the wallet acts on is skipped unread."""
        try:
            events = table_events(value, headers, WANTED)
        except Exception:
            log.error("undecodable table events skipped", extra={"size": len(value)})
            return [self._count("undecodable", "undecodable")]
        return [await self.handle_event(event) for event in events]

    async def handle_event(self, event: events_pb2.TableEvent) -> str:
        kind = event.WhichOneof("body")
        m = event.match_id
        if kind == "match_ended":
            ended = event.match_ended
            if ended.info.profile != "wagered":
                return self._count(kind, "not_wagered")
            if ended.info.tournament:  # played for a bracket: its pool pays, not an escrow
                return self._count(kind, "tournament")
            winner = ended.info.player_ids[ended.winner_seat]
            cube = max((g.cube for g in ended.games), default=1)
            return await self._apply(
                kind, self.ledger.settle(money_keys.settle(m), m, winner, cube)
            )
        if kind == "match_closed":
            if event.match_closed.info.profile != "wagered":
                return self._count(kind, "not_wagered")
            if event.match_closed.info.tournament:
                return self._count(kind, "tournament")
            return await self._apply(kind, self.ledger.refund(money_keys.refund(m), m))
        if kind == "double_taken":
            taken = event.double_taken
            return await self._capture(kind, m, money_keys.raise_hold(m, taken.game_no, taken.cube))
        if kind == "boost_applied":
            b = event.boost_applied
            return await self._capture(
                kind, m, money_keys.boost_hold(m, b.game_no, b.seat, b.boost_no)
            )
        return self._count(kind or "other", "ignored")

    async def _capture(self, kind: str, match_id: str, hold_key: str) -> str:
        """A hold the table may have captured already (then this replays it). No hold at all is
        a table without money (a casual cube: no escrow), nothing to do; a wagered match whose
        hold is unknown is a fault worth a warning (the settlement still pays the stakes)."""
        try:
            outcome = await self.ledger.capture(money_keys.capture(hold_key), hold_key)
        except ServiceError as err:
            if err.code != "UNKNOWN_HOLD":
                return self._skipped(kind, err)
            if not await self.ledger.has_escrow(match_id):
                return self._count(kind, "not_wagered")
            log.warning("hold unknown at capture", extra={"event": kind, "hold": hold_key})
            return self._count(kind, "unknown_hold")
        return self._count(kind, "replayed" if outcome.replayed else "applied")

    async def _apply(self, kind: str, operation: Any) -> str:
        try:
            outcome = await operation
        except ServiceError as err:
            return self._skipped(kind, err)
        return self._count(kind, "replayed" if outcome.replayed else "applied")

    def _skipped(self, kind: str, err: ServiceError) -> str:
        """No escrow, or already closed the other way: nothing to do."""
        log.info("table event skipped", extra={"event": kind, "code": err.code})
        return self._count(kind, err.code.lower())

    def _count(self, kind: str, result: str) -> str:
        if self.metrics:
            self.metrics.consumed.labels(kind, result).inc()
        return result


async def consume(handler: TableEventsHandler, reader: Reader, stop: asyncio.Event) -> None:
    """Consume the table events until `stop` (event_log.consume_records)."""

    async def handle(record: Incoming) -> None:
        await handler.handle_record(record.value, record.headers)

    await event_log.consume_records(reader, handle, stop, max_records=200)
