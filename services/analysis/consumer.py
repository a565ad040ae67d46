"""table-events in, finished matches queued: each match end event (MatchEnded or MatchClosed,
with every move) becomes one queued row, once by match id. Records without one are skipped by
their kinds header, undecoded."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from bg.events.v1 import events_pb2
from services.analysis.ports import AnalysisRepository
from services.common import event_log
from services.common.log_port import Incoming, Reader
from services.contracts.event_records import table_events
from services.contracts.topics import TABLE_EVENTS

log = logging.getLogger("bg.analysis")
ENDS = frozenset({"match_ended", "match_closed"})


class Enqueuer:
    def __init__(
        self, store: AnalysisRepository, metrics: Any = None, woken: asyncio.Event | None = None
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.woken = woken  # set when a match is queued: the worker need not wait for its poll

    async def handle_record(self, topic: str, value: bytes, headers: Any) -> list[str]:
        if topic != TABLE_EVENTS:
            return []
        try:
            events = table_events(value, headers, ENDS)
        except Exception:
            log.error("undecodable event skipped", extra={"topic": topic, "size": len(value)})
            return [self._count("undecodable")]
        return [await self.handle_event(e) for e in events if e.WhichOneof("body") in ENDS]

    async def handle_event(self, event: events_pb2.TableEvent) -> str:
        body: Any = getattr(event, event.WhichOneof("body") or "")
        if not any(m.WhichOneof("body") == "turn_ended" for m in body.moves):
            return self._count("ignored")  # nothing was played: nothing to judge
        queued = await self.store.enqueue(
            event.match_id,
            event.table_id,
            body.info.profile,
            event.at_ms,
            event.SerializeToString(),
            int(time.time() * 1000),
        )
        if queued and self.woken is not None:
            self.woken.set()
        return self._count("queued" if queued else "duplicate")

    def _count(self, result: str) -> str:
        if self.metrics is not None:
            self.metrics.queued.labels(result).inc()
        return result


async def consume(enqueuer: Enqueuer, reader: Reader, stop: asyncio.Event, lag: Any = None) -> None:
    """Consume table-events until `stop` (event_log.consume_records), its lag kept."""

    async def handle(record: Incoming) -> object:
        return await enqueuer.handle_record(record.logical, record.value, record.headers)

    await event_log.consume_records(reader, handle, stop, lag=lag)
