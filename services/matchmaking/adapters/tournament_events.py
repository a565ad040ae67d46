"""Finished tournaments' results to the topic `tournament-events` (issue 29), keyed by tournament
id, at least once, through the event log port (services/common/log_port.py).

The outbox is the tournament's own document: the director publishes the result, records the
log's receipt in the document (services/matchmaking/tournaments.py), and keeps the tournament
among its work until the log says the record is read (a KEPT receipt, production Kafka's: at
once); if the log lost it, the director publishes it again. Consumers dedupe on the event's id.
A tournament finishes a few times an hour, not a second: one record at a time, no batching.
"""

from __future__ import annotations

from collections.abc import Callable

from services.common.clock import now_ms
from services.common.log_port import Outgoing, Publisher, Receipt, Verdict
from services.contracts.topics import TOURNAMENT_EVENTS


class TournamentEvents:
    def __init__(self, publisher: Publisher, now: Callable[[], int] = now_ms) -> None:
        self.publisher = publisher
        self.now = now

    async def publish(self, tournament_id: str, value: bytes) -> Receipt:
        """Send one record and wait for the log's acknowledgement: its receipt."""
        record = Outgoing(TOURNAMENT_EVENTS, tournament_id.encode(), value)
        (receipt,) = await self.publisher.publish([record], self.now())
        assert isinstance(receipt, str)  # a record that follows nothing is never held back
        return receipt

    async def read(self, receipt: Receipt) -> bool | None:
        """True once every group read the record; False when the log lost it (publish it
        again); None while it waits to be read."""
        (verdict,) = await self.publisher.check(TOURNAMENT_EVENTS, [receipt])
        return {Verdict.READ: True, Verdict.LOST: False}.get(verdict)

    async def close(self) -> None:
        await self.publisher.close()
