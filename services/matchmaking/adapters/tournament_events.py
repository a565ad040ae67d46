"""Finished tournaments' results to the topic `tournament-events` (issue 29), keyed by tournament
id, at least once.

The outbox is the tournament's own document: the director publishes the result, records where
it went in the document (services/matchmaking/tournaments.py), and keeps the tournament among
its work until the record is known to be read:
- on production Kafka (durable, retained) as soon as the broker acknowledged it;
- on a broker that may forget (services/common/event_log.py, embedded mode) once every group
  reading the topic has committed past it; if the broker forgot it (another incarnation), the
  director publishes it again. Consumers dedupe on the event's id.
A tournament finishes a few times an hour, not a second: one record at a time, no batching.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiokafka import TopicPartition

from services.common.clock import now_ms
from services.common.event_log import Forgetful, confirmed
from services.common.topics import Namespace
from services.contracts.topics import TOURNAMENT_EVENTS
from services.matchmaking.ports import Sent


class TournamentEvents:
    def __init__(
        self,
        make_producer: Callable[[], Any],
        namespace: Namespace,
        forgetful: Forgetful | None,
        now: Callable[[], int] = now_ms,
    ) -> None:
        self.make_producer = make_producer  # made inside the running loop, on first use
        self.producer: Any = None
        self.namespace = namespace
        self.forgetful = forgetful
        self.now = now

    async def publish(self, tournament_id: str, value: bytes) -> Sent:
        """Send one record and wait for the broker's acknowledgement."""
        if self.producer is None:
            producer = self.make_producer()
            await producer.start()
            self.producer = producer
        gen, incarnation = 0, ""
        topic = self.namespace.topic(TOURNAMENT_EVENTS)
        if self.forgetful is not None:
            gen, topic, incarnation = await self.forgetful.target(TOURNAMENT_EVENTS, self.now())
        meta = await (await self.producer.send(topic, value, tournament_id.encode()))
        return Sent(gen, int(meta.partition), int(meta.offset), incarnation)

    async def read(self, sent: Sent) -> bool | None:
        """True once every group read the record; False when the broker forgot it (publish it
        again); None while it waits to be read."""
        f = self.forgetful
        if f is None:
            return True
        if sent.incarnation != await f.incarnation.current():
            return False
        tp = TopicPartition(
            f.log.topic(TOURNAMENT_EVENTS, sent.gen, sent.incarnation), sent.partition
        )
        groups = (await f.committed.of(TOURNAMENT_EVENTS, {tp}))[tp]
        return True if confirmed(groups, sent.offset) else None

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.stop()
            self.producer = None
        if self.forgetful is not None:
            await self.forgetful.close()
