"""Kafka clients built from settings. Idempotence is a setting: Tansu refuses InitProducerId,
so it is off locally and on in production; consumers deduplicate either way. No client of ours
ever creates a topic: topics are created once, with their partition counts, by the deployment
(`bgcluster up`, the k8s Strimzi topics); a producer asking for a missing topic gets
UNKNOWN_TOPIC_OR_PARTITION and retries instead of creating it with the broker's defaults."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import CommitFailedError

from services.common.backoff import Backoff, pause
from services.common.event_log import EventLog, GenerationConsumer, Incarnation
from services.common.kafka_clients import never_create_topics
from services.common.service import ServiceApp
from services.common.settings import EventReaderSettings, KafkaLog
from services.common.topics import Namespace

log = logging.getLogger("bg.kafka")


def producer(bootstrap: str, idempotent: bool, client_id: str) -> AIOKafkaProducer:
    made = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        enable_idempotence=idempotent,
        acks="all",
        linger_ms=5,
        request_timeout_ms=10_000,
    )
    never_create_topics(made.client)
    return made


def consumer(bootstrap: str, group: str, *topics: str, client_id: str) -> AIOKafkaConsumer:
    made = AIOKafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    never_create_topics(made._client)
    return made


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
    return EventLog(
        Namespace(settings.kafka_namespace),
        settings.kafka_log,
        settings.kafka_rotate_s,
        settings.kafka_partitions,
    )


def share(spec: str) -> tuple[int, int]:
    """BG_CONSUMER_SHARE "i/n" as (i, n)."""
    mine, _, count = spec.partition("/")
    i, n = int(mine), max(1, int(count))
    if not 0 <= i < n:
        raise ValueError(f"BG_CONSUMER_SHARE {spec!r}: i must be in 0..n-1")
    return i, n


def consumer_of(
    settings: LogSettings,
    service: str,
    logicals: tuple[str, ...],
    client_id: str,
    incarnation: Incarnation | None,
    consumer_share: str = "0/1",
) -> Any:
    """The consumer of `logicals` for `service`'s group: group-managed on the topics themselves
    (kafka mode), or on every live generation's partitions of its share (embedded mode)."""
    log_ = event_log(settings)
    group = log_.namespace.group(service)
    if not log_.embedded:
        topics = [log_.namespace.topic(t) for t in logicals]
        return consumer(settings.kafka_bootstrap, group, *topics, client_id=client_id)
    assert incarnation is not None
    inner = consumer(settings.kafka_bootstrap, group, client_id=client_id)
    return GenerationConsumer(inner, log_, logicals, incarnation, share(consumer_share))


COMMIT_EVERY_S = 1.0


class Committer:
    """Commits a consumer's processed offsets at most every `every_s`, not after each batch: on
    Tansu over S3 every commit is an object write, and in the soak the broker's store was the
    busiest process. A crash re-delivers at most that much more; every consumer of ours
    dedupes."""

    def __init__(
        self,
        consumer: Any,
        every_s: float = COMMIT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.consumer = consumer
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
            try:
                await self.consumer.commit()
            except CommitFailedError:
                # The group rebalanced under us: the partitions' new owner reads on from the last
                # commit (and dedupes). Going on is right; restarting the consumer would join as
                # a new member and rebalance the group again, which failed the next member's
                # commit: the storm the soak saw with two wallets and two leaderboards.
                log.info("offsets not committed: the group rebalanced; their new owner re-reads")
            self._dirty = False
        self._last = self.clock()


async def consume_records(
    consumer: Any,
    handle: Callable[[Any], Awaitable[object]],
    stop: asyncio.Event,
    max_records: int = 500,
    lag: Any = None,
) -> None:
    """Consume until `stop`: each record to `handle` in order, the offsets committed after
    (at least once, see Committer); `lag` (a gauge), when given, set to the records behind."""
    committer = Committer(consumer)
    try:
        await consumer.start()  # inside: one that fails to start is stopped too
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=500, max_records=max_records)
            for records in batches.values():
                for record in records:
                    await handle(record)
            await committer.tick(bool(batches))
            if lag is not None:
                total = 0
                for tp in consumer.assignment():
                    end = consumer.highwater(tp)
                    if end is not None:
                        total += max(0, end - await consumer.position(tp))
                lag.set(total)
        await committer.flush()
    finally:
        await consumer.stop()


def in_logical_names(
    handle_record: Callable[[str, bytes, Any], Awaitable[object]], namespace: Namespace
) -> Callable[[Any], Awaitable[object]]:
    """A record handler for consume_records that speaks logical topic names: it is given
    (logical topic, value, headers) of each record."""

    async def handle(record: Any) -> object:
        return await handle_record(namespace.logical(record.topic), record.value, record.headers)

    return handle


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
    service: str,
    logicals: tuple[str, ...],
    consume: Callable[[Any, asyncio.Event], Awaitable[None]],
    incarnation: Incarnation | None = None,
) -> Callable[[], None]:
    """A service's consumer of `logicals`, wired as every service wires one: the service's
    group, its replica as client id, its share of the partitions (BG_CONSUMER_SHARE), and on an
    embedded log the broker's incarnation (`incarnation`, shared with the service's producer,
    or one of its own closed with the app). `consume(consumer, stop)` runs one consumer until
    `stop` (consume_records). Returns what the app's start hook calls, once its database is
    ready: a consumer kept running (keep_consuming) until the app stops."""
    log_ = event_log(settings)
    if log_.embedded and incarnation is None:
        incarnation = Incarnation(settings.kafka_bootstrap, log_)
        app.closes(incarnation.close)

    def make() -> Any:  # aiokafka: untyped
        client_id = settings.replica or service
        return consumer_of(
            settings, service, logicals, client_id, incarnation, settings.consumer_share
        )

    def spawn() -> None:
        stop = app.background.stop
        running = keep_consuming(make, lambda c: consume(c, stop), stop, "events")
        app.background.spawn("consumer", running)

    return spawn
