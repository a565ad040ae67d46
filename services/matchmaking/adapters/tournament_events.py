"""Finished tournaments' results to the topic `tournament-events` (issue 29), keyed by tournament
id, at least once, through the event log port (services/common/log_port.py).

The outbox is the tournament's own document: the director publishes the result, records where
it went in the document (services/matchmaking/tournaments.py), and keeps the tournament among
its work until the record is known to be read:
- on production Kafka (durable, retained) as soon as the broker acknowledged it;
- on a broker that may forget (embedded mode) once every group reading the topic has committed
  past it; if the broker forgot it (another incarnation), the director publishes it again.
  Consumers dedupe on the event's id.
A tournament finishes a few times an hour, not a second: one record at a time, no batching.
"""

from __future__ import annotations

from collections.abc import Callable

from services.common.clock import now_ms
from services.common.log_port import Outgoing, Placement, Publisher, Verdict
from services.contracts.topics import TOURNAMENT_EVENTS
from services.matchmaking.ports import Sent


class TournamentEvents:
    def __init__(self, publisher: Publisher, now: Callable[[], int] = now_ms) -> None:
        self.publisher = publisher
        self.now = now

    async def publish(self, tournament_id: str, value: bytes) -> Sent:
        """Send one record and wait for the broker's acknowledgement."""
        record = Outgoing(TOURNAMENT_EVENTS, tournament_id.encode(), value)
        (placed,) = await self.publisher.publish([record], self.now())
        assert isinstance(placed, Placement)  # a record with no `after` is never held back
        return Sent(placed.gen, placed.partition, placed.offset, placed.incarnation)

    async def read(self, sent: Sent) -> bool | None:
        """True once every group read the record; False when the broker forgot it (publish it
        again); None while it waits to be read."""
        placement = Placement(sent.gen, sent.partition, sent.offset, sent.incarnation)
        (verdict,) = await self.publisher.check(TOURNAMENT_EVENTS, [placement])
        return {Verdict.READ: True, Verdict.FORGOTTEN: False}.get(verdict)

    async def close(self) -> None:
        await self.publisher.close()
