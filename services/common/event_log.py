"""A service's event log from its settings, and the one way a service reads it.

`open_event_log` gives the port (services/common/log_port.py) in BG_KAFKA_LOG's mode: the
production Kafka adapter or the embedded one. `consume_in_background` runs a service's reader
(its group, replica, share), each record handled in order and committed after, started again
after a failure. Idempotence is a setting: Tansu refuses InitProducerId, so it is off locally
and on in production; consumers deduplicate either way. No client of ours ever creates a topic
(services/common/kafka_clients.py): topics are created once, with their partition counts, by
the deployment (`bgcluster up`, the k8s Strimzi topics).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from services.common.backoff import Backoff, pause
from services.common.embedded_generations import EventLog
from services.common.embedded_log import EmbeddedEventLog
from services.common.kafka_log import KafkaEventLog
from services.common.log_port import EventLogPort, Incoming, Reader
from services.common.service import ServiceApp
from services.common.settings import EventReaderSettings, KafkaLog
from services.common.topics import Namespace

log = logging.getLogger("bg.kafka")


class LogSettings(Protocol):
    """The settings of a service on the event log (read-only: settings are frozen)."""

    @property
    def kafka_bootstrap(self) -> str: ...
    @property
    def kafka_namespace(self) -> str: ...
    @property
    def kafka_log(self) -> KafkaLog: ...
    @property
    def kafka_rotate_s(self) -> float: ...
    @property
    def kafka_partitions(self) -> int: ...


def event_log(settings: LogSettings) -> EventLog:
    """The cluster's layout on its broker (names, mode, generations)."""
    return EventLog(
        Namespace(settings.kafka_namespace),
        settings.kafka_log,
        settings.kafka_rotate_s,
        settings.kafka_partitions,
    )


def open_event_log(
    settings: LogSettings, readers: Mapping[str, tuple[str, ...]], idempotent: bool = False
) -> EventLogPort:
    """The event log port of BG_KAFKA_LOG's mode (services/common/log_port.py): its publishers
    and readers share the adapter's clients; the caller closes it (app.closes). `readers`: every
    topic and the services whose groups read it (services/contracts/topics.py); `idempotent`:
    the producers' BG_KAFKA_IDEMPOTENCE (Tansu refuses it)."""
    layout = event_log(settings)
    if layout.embedded:
        return EmbeddedEventLog(settings.kafka_bootstrap, layout, readers, idempotent)
    return KafkaEventLog(settings.kafka_bootstrap, layout.namespace, idempotent)


def share(spec: str) -> tuple[int, int]:
    """BG_CONSUMER_SHARE "i/n" as (i, n)."""
    mine, _, count = spec.partition("/")
    i, n = int(mine), max(1, int(count))
    if not 0 <= i < n:
        raise ValueError(f"BG_CONSUMER_SHARE {spec!r}: i must be in 0..n-1")
    return i, n


COMMIT_EVERY_S = 1.0


class Committer:
    """Commits a reader's processed records at most every `every_s`, not after each batch: on
    Tansu over S3 every commit is an object write, and in the soak the broker's store was the
    busiest process. A crash re-delivers at most that much more; every consumer of ours
    dedupes."""

    def __init__(
        self,
        reader: Any,
        every_s: float = COMMIT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reader = reader
        self.every_s = every_s
        self.clock = clock
        self._dirty = False
        self._last = clock()

    async def tick(self, processed: bool) -> None:
        """After each poll: `processed` says a batch was handled."""
        self._dirty = self._dirty or processed
        if self._dirty and self.clock() - self._last >= self.every_s:
            await self.flush()

    async def flush(self) -> None:
        if self._dirty:
            await self.reader.commit()
            self._dirty = False
        self._last = self.clock()


async def consume_records(
    reader: Reader,
    handle: Callable[[Incoming], Awaitable[object]],
    stop: asyncio.Event,
    max_records: int = 500,
    lag: Any = None,
) -> None:
    """Read until `stop`: each record to `handle` in order, committed after (at least once,
    see Committer); `lag` (a gauge), when given, set to the records behind."""
    committer = Committer(reader)
    try:
        await reader.start()  # inside: one that fails to start is stopped too
        while not stop.is_set():
            records = await reader.poll(timeout_ms=500, max_records=max_records)
            for record in records:
                await handle(record)
            await committer.tick(bool(records))
            if lag is not None:
                lag.set(await reader.behind())
        await committer.flush()
    finally:
        await reader.stop()


HEALTHY_S = 60.0  # a consumer that ran this long before failing counts as healthy


async def keep_consuming(
    make_consumer: Callable[[], Any],
    run: Callable[[Any], Awaitable[None]],
    stop: asyncio.Event,
    name: str,
) -> None:
    """Run a consumer loop until `stop`; when it fails (broker down, rebalance error), log it and
    start over with a new consumer after a backoff (from 2 s, jittered, at most 10 s; back to 2 s
    once a consumer has run HEALTHY_S). Offsets are committed after processing (at most every
    COMMIT_EVERY_S), so a restart re-delivers at most that much (consumers are idempotent)."""
    backoff = Backoff(2.0, cap_s=10.0)
    while not stop.is_set():
        started = time.monotonic()
        try:
            await run(make_consumer())
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # this loop is being stopped
            # A cancellation from inside aiokafka (a timed-out call cancelled a future its
            # other calls shared): a failure like any other, not the end of consuming.
            log.warning("consumer cancelled from within; restarting", extra={"consumer": name})
            await pause(stop, backoff.failed())
        except Exception:
            if time.monotonic() - started >= HEALTHY_S:
                backoff.reset()  # a failure after a long healthy run starts the policy afresh
            delay = backoff.failed()
            log.exception(
                "consumer failed; restarting", extra={"consumer": name, "in_s": round(delay, 1)}
            )
            await pause(stop, delay)


def consume_in_background(
    app: ServiceApp,
    settings: EventReaderSettings,
    events: EventLogPort,
    service: str,
    logicals: tuple[str, ...],
    consume: Callable[[Reader, asyncio.Event], Awaitable[None]],
) -> Callable[[], None]:
    """A service's reader of `logicals` on the event log port, wired as every service wires one:
    the service's group, its replica as client id, its share of the partitions
    (BG_CONSUMER_SHARE). `consume(reader, stop)` runs one reader until `stop`
    (consume_records). Returns what the app's start hook calls, once its database is ready: a
    reader kept running (keep_consuming), a new one after a failure, until the app stops."""

    def make() -> Reader:
        client_id = settings.replica or service
        return events.reader(service, logicals, client_id, share(settings.consumer_share))

    def spawn() -> None:
        stop = app.background.stop
        running = keep_consuming(make, lambda r: consume(r, stop), stop, "events")
        app.background.spawn("consumer", running)

    return spawn
