"""The event log on an embedded broker that forgets: topics in generations, bounded history,
and the outboxes as the durable log.

Tansu on `memory://` (the local default: on SeaweedFS's S3 the broker and its store cost ~2 ms
of CPU per event, measured) keeps every batch it is given, lists them all on each fetch that
finds data, and forgets everything when it restarts. So in `embedded` mode (BG_KAFKA_LOG):

- A logical topic is a series of generations, `NS.table-events.g<gen>.i<incarnation>`, a new one
  every `rotate_s`. Producers write the current generation (a table relay the previous one, for
  a table whose last records there are not read yet); the keeper (TopicKeeper) makes the next
  one ahead of time and deletes one that no producer writes any more (plus a slack for a late
  produce) once every group that reads the topic has committed its end (or, MAX_GENERATIONS
  periods and at least FORCE_AFTER_S after that, whatever a lagging group left: its lag alert
  has fired long before). The history the
  broker keeps stays a few periods long, however long the cluster runs.
- The broker's incarnation is a random id it holds in a marker topic. A restart forgets the
  marker, a new id is drawn and every generation's name changes with it: no consumer resumes a
  forgotten topic at an offset of another's.
- The outboxes (the tables' Redis streams, the wallet's outbox table) are the durable log. A
  producer remembers where each record went (generation, partition, offset, incarnation) and
  keeps it unconfirmed until every group has committed past it (Committed); when the
  incarnation changes, it sends the unconfirmed records again, and the consumers dedupe.
- Consumers (GenerationConsumer) assign themselves every partition of every live generation of
  their topics (their share of them, with several replicas), without group management: Tansu
  stalls a group for seconds on each topic a pattern subscription adds and stops it for good
  when a subscribed topic is deleted (both measured), while an assignment changes in place.

In `kafka` mode (production Kafka: replicated, retained, durable) none of this applies: one
topic per logical name, group-managed consumers, retention by the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, UnknownTopicOrPartitionError

from services.common.clock import now_ms
from services.common.kafka_clients import never_create_topics
from services.common.topics import GENERATION, Namespace

log = logging.getLogger("bg.event_log")
LogMode = Literal["kafka", "embedded"]
MAX_GENERATIONS = 30  # a generation this many periods old is deleted, read or not,
FORCE_AFTER_S = 300.0  # but never sooner than this after the groups could have read it
MARKER = "bg-incarnation"  # the marker topic's logical name
COMMIT_TIMEOUT_S = 5.0
CALL_TIMEOUT_S = 10.0  # a call to the broker that takes longer is given up
# A keeper's look at whether a generation is read by every group, bounded: one another keeper
# deleted meanwhile makes aiokafka wait for its leader; it is looked at again next step.
DONE_TIMEOUT_S = 2.0
# A consumer lets go of a generation this long after its writers stopped (`written_until`), so
# the end its last fetch learned (fetches are answered within 0.5 s) is the final one.
LET_GO_AFTER_MS = 2_000
# The longest a produce may take (aiokafka's request timeout, 10 s, and a margin): a
# generation is let go of and deleted only this long after its writers moved on.
DELIVERY_SLACK_S = 15.0
STEP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class EventLog:
    """How a cluster's events are laid out on its broker."""

    namespace: Namespace
    mode: LogMode = "kafka"
    rotate_s: float = 60.0
    partitions: int = 1  # per generation (embedded mode)

    @property
    def embedded(self) -> bool:
        return self.mode == "embedded"

    def generation_at(self, at_ms: int) -> int:
        return int(at_ms // int(self.rotate_s * 1000))

    def written_until(self, gen: int) -> int:
        """The ms after which no producer writes `gen` any more: the end of the next period (a
        table keeps to the previous generation until its last records there are read) plus
        the longest a produce may take (DELIVERY_SLACK_S)."""
        return (gen + 2) * int(self.rotate_s * 1000) + int(DELIVERY_SLACK_S * 1000)

    def forced_at(self, gen: int) -> int:
        """The ms after which `gen` is deleted whether or not every group has read it: it is
        MAX_GENERATIONS periods old and FORCE_AFTER_S past `written_until` (with short periods
        the count alone came before the groups had a chance: every generation of a 1 s log was
        deleted unread, under its consumers)."""
        periods = (gen + MAX_GENERATIONS) * int(self.rotate_s * 1000)
        return max(periods, self.written_until(gen) + int(FORCE_AFTER_S * 1000))

    def topic(self, logical: str, gen: int, incarnation: str) -> str:
        """Where a record goes: the logical topic itself in kafka mode, else its generation."""
        if not self.embedded:
            return self.namespace.topic(logical)
        return self.namespace.generation(logical, gen, incarnation)

    def marker(self) -> str:
        return self.namespace.topic(MARKER)


def _consumer(bootstrap: str, **options: Any) -> AIOKafkaConsumer:
    made = AIOKafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=5000, **options)
    never_create_topics(made._client)  # asking for a deleted generation must not remake it
    return made


async def _started(bootstrap: str, **options: Any) -> AIOKafkaConsumer:
    """A started consumer; one that failed to start is stopped (else aiokafka logs "Unclosed
    AIOKafkaConsumer" at ERROR when it is collected: a broker restarting is not an error)."""
    made = _consumer(bootstrap, **options)
    try:
        await made.start()
    except BaseException:
        with contextlib.suppress(Exception):
            await made.stop()
        raise
    return made


def _admin(bootstrap: str) -> AIOKafkaAdminClient:
    made = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    never_create_topics(made._client)
    return made


TOPIC_ALREADY_EXISTS = 36  # Kafka's error codes
UNKNOWN_TOPIC = 3


async def create(admin: AIOKafkaAdminClient, topics: Sequence[str], partitions: int) -> None:
    """Create topics; one another client made first is fine."""
    response = await admin.create_topics([NewTopic(t, partitions, 1) for t in topics])
    for name, code, message in response.topic_errors:
        if code not in (0, TOPIC_ALREADY_EXISTS):
            raise KafkaError(f"cannot create topic {name}: error {code} {message}")


def confirmed(committed: dict[str, int | None], offset: int) -> bool:
    """Whether every group's committed offset (the next one it reads) is past `offset`."""
    return all(c is not None and c > offset for c in committed.values())


class Incarnation:
    """The broker's incarnation: the first record of the marker topic, drawn by whoever finds
    the topic missing (a fresh or restarted broker). Read at most every `refresh_s`."""

    def __init__(self, bootstrap: str, log_: EventLog, refresh_s: float = 1.0) -> None:
        self.bootstrap = bootstrap
        self.log = log_
        self.refresh_s = refresh_s
        self._value = ""
        self._read_at = 0.0
        self._lock = asyncio.Lock()
        self._reader: AIOKafkaConsumer | None = None

    async def current(self, fresh: bool = False) -> str:
        async with self._lock:
            if fresh or not self._value or time.monotonic() - self._read_at >= self.refresh_s:
                try:
                    # Bounded: aiokafka retries some calls to a broker that is away forever.
                    self._value = await asyncio.wait_for(self._read_or_draw(), CALL_TIMEOUT_S)
                except (TimeoutError, KafkaError):
                    await self.close()  # a new reader next time
                    raise
                self._read_at = time.monotonic()
            return self._value

    async def without_waiting(self) -> str:
        """The incarnation as last read while a read is under way (a consumer's commit must not
        wait for the look beside its reads), else `current()`."""
        if self._lock.locked() and self._value:
            return self._value
        return await self.current()

    async def _read_or_draw(self) -> str:
        found = await self._read()
        if found:
            return found
        topic = self.log.marker()
        admin = _admin(self.bootstrap)
        await admin.start()
        try:
            await create(admin, [topic], 1)
        finally:
            await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        never_create_topics(producer.client)
        await producer.start()
        try:
            await producer.send_and_wait(topic, secrets.token_hex(4).encode(), partition=0)
        finally:
            await producer.stop()
        found = await self._read()  # whoever wrote first: every reader takes offset 0
        if not found:
            raise KafkaError("the broker's incarnation marker could not be read back")
        return found

    async def _read(self) -> str:
        # One reader kept between checks (starting one per check showed as a tenth of a loaded
        # table replica's samples). It holds no assignment between reads, so nothing it
        # prefetched of a forgotten marker can answer a later read; it is dropped on any failure.
        if self._reader is None:
            self._reader = await _started(self.bootstrap, enable_auto_commit=False)
        reader = self._reader
        try:
            topic = self.log.marker()
            cluster = await reader._client.fetch_all_metadata()
            if not cluster.partitions_for_topic(topic):
                return ""
            tp = TopicPartition(topic, 0)
            reader.assign([tp])
            reader.seek(tp, 0)
            try:
                for _ in range(5):
                    batch = await reader.getmany(tp, timeout_ms=500, max_records=1)
                    for record in batch.get(tp, []):
                        return bytes(record.value).decode()
                return ""
            finally:
                reader.assign([])
        except BaseException:
            await self._drop_reader()
            raise

    async def _drop_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            with contextlib.suppress(Exception):
                await reader.stop()

    async def close(self) -> None:
        """Forget the value (the next `current()` reads afresh) and let go of the reader."""
        self._value = ""
        await self._drop_reader()


class Committed:
    """The consumer groups' committed offsets, read through an idle member-less consumer per
    group (groups are never joined): one OffsetFetch per group for all the partitions asked
    about. `readers`: every topic of the cluster and the services whose groups read it
    (services/contracts/topics.py)."""

    def __init__(
        self, bootstrap: str, namespace: Namespace, readers: Mapping[str, tuple[str, ...]]
    ) -> None:
        self.bootstrap = bootstrap
        self.namespace = namespace
        self.readers = readers
        self._observers: dict[str, AIOKafkaConsumer] = {}

    async def of(
        self, logical: str, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, dict[str, int | None]]:
        """For each partition, every reading group's committed offset (None: none yet)."""
        asked = list(tps)
        out: dict[TopicPartition, dict[str, int | None]] = {tp: {} for tp in asked}
        for service in self.readers[logical]:
            observer = await self._observer(self.namespace.group(service))
            try:
                found = await asyncio.wait_for(_fetch_committed(observer, asked), CALL_TIMEOUT_S)
            except (UnknownTopicOrPartitionError, TimeoutError):
                found = {}  # not known to be read: nothing is confirmed by it
            for tp in asked:
                out[tp][service] = found.get(tp)
        return out

    async def _observer(self, group: str) -> AIOKafkaConsumer:
        found = self._observers.get(group)
        if found is None:
            found = await _started(self.bootstrap, group_id=group, enable_auto_commit=False)
            self._observers[group] = found
        return found

    async def close(self) -> None:
        for observer in self._observers.values():
            with contextlib.suppress(Exception):
                await observer.stop()
        self._observers.clear()


async def _fetch_committed(
    observer: AIOKafkaConsumer, tps: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """The group's committed offsets of `tps` in one OffsetFetch (none: no commit, or a topic
    the broker does not know). `AIOKafkaConsumer.committed` asks one partition a request: a
    table replica's confirmations asked every group for every partition twice a second, 2-3%
    of a loaded replica's CPU. Its coordinator's batch call is the same request, for many."""
    found = await observer._coordinator.fetch_committed_offsets(tps)
    return {tp: int(om.offset) for tp, om in found.items() if om.offset >= 0}


class StaleGeneration(KafkaError):
    """A generation older than the live ones: it is never (re)made."""


def series_of(topic: str) -> tuple[str, str, int] | None:
    """(logical topic's name, incarnation, generation) of a generation's topic name."""
    match = GENERATION.search(topic)
    if match is None:
        return None
    return topic[: match.start()], match.group(2), int(match.group(1))


def newest_generations(topics: Iterable[str]) -> dict[tuple[str, str], int]:
    """The newest generation of each (logical topic's name, incarnation) among `topics`."""
    newest: dict[tuple[str, str], int] = {}
    for topic in topics:
        found = series_of(topic)
        if found is not None:
            name, incarnation, gen = found
            newest[(name, incarnation)] = max(gen, newest.get((name, incarnation), gen))
    return newest


class Topics:
    """Makes sure the topics a producer is about to write exist (a restarted broker has none
    until a keeper's next step): each is created once, idempotently, then remembered.

    A generation is never made once a newer one than the next exists: it may have been read
    and deleted, and one made again under the same name starts at offset 0 while the groups'
    commits to the old one, which aiokafka retries until they land, put them past what it gets
    (the loss a table replica whose clock ran 30 s slow caused, measured in make partitions)."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        self.bootstrap = bootstrap
        self.partitions = partitions
        self._known: set[str] = set()
        self._newest: dict[tuple[str, str], int] = {}
        self._admin: AIOKafkaAdminClient | None = None
        self.looked_at = 0.0  # time.monotonic() of the last look

    def knows(self, topic: str) -> bool:
        return topic in self._known

    def newest(self, topic: str) -> int | None:
        """The newest generation of `topic`'s series seen, if any."""
        found = series_of(topic)
        return None if found is None else self._newest.get(found[:2])

    async def look(self) -> None:
        """Learn the topics the broker has."""
        existing = await (await self._admin_client()).list_topics()
        self.looked_at = time.monotonic()
        self._known = set(existing)  # what was deleted since the last look is known no more
        self._newest = newest_generations(existing)

    async def ensure(self, topics: Iterable[str]) -> None:
        missing = sorted(set(topics) - self._known)
        if not missing:
            return
        await self.look()
        missing = sorted(set(missing) - self._known)
        if not missing:
            return
        for topic in missing:
            newest, found = self.newest(topic), series_of(topic)
            if newest is not None and found is not None and found[2] < newest - 1:
                raise StaleGeneration(f"{topic}: generations up to {newest} exist")
        await create(await self._admin_client(), missing, self.partitions)
        self._known.update(missing)
        self._newest = newest_generations([*self._known])

    async def _admin_client(self) -> AIOKafkaAdminClient:
        if self._admin is None:
            admin = _admin(self.bootstrap)
            await admin.start()
            self._admin = admin
        return self._admin

    def forget(self) -> None:
        """The broker restarted, or a topic went: nothing is known to exist any more."""
        self._known.clear()
        self._newest.clear()

    async def close(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                await self._admin.close()
            self._admin = None


@dataclass(frozen=True)
class Forgetful:
    """What a producer needs on a broker that may forget: the layout, the broker's incarnation,
    the groups' offsets, the topics it writes."""

    log: EventLog
    incarnation: Incarnation
    committed: Committed
    topics: Topics

    async def now(self, logical: str, at_ms: int) -> tuple[int, str]:
        """(generation, incarnation) a record of `logical` goes to now. When that generation's
        topic is still to be made, the incarnation is asked afresh: the broker may be a new one
        the cached incarnation has not seen yet, and a topic named for the old one would be
        made on it and read by nobody (seen: a produce right after a restart)."""
        own = self.log.generation_at(at_ms)
        incarnation = await self.incarnation.current()
        gen = self._live(logical, own, incarnation)
        stale = gen > own and time.monotonic() - self.topics.looked_at >= self.log.rotate_s / 4
        if stale or not self.topics.knows(self.log.topic(logical, gen, incarnation)):
            incarnation = await self.incarnation.current(fresh=True)
            await self.topics.look()
            gen = self._live(logical, own, incarnation)
        return gen, incarnation

    def _live(self, logical: str, gen: int, incarnation: str) -> int:
        """`gen`, or the oldest that may be written when it is older (the newest made, less
        one: keepers make the current and the next): a clock behind the keepers' (theirs is
        the store's) would otherwise ask for one read and deleted already."""
        newest = self.topics.newest(self.log.topic(logical, gen, incarnation))
        return gen if newest is None else max(gen, newest - 1)

    async def target(self, logical: str, at_ms: int) -> tuple[int, str, str]:
        """(generation, topic, incarnation) a record of `logical` goes to now, the topic made
        sure of."""
        gen, incarnation = await self.now(logical, at_ms)
        topic = self.log.topic(logical, gen, incarnation)
        await self.topics.ensure([topic])
        return gen, topic, incarnation

    async def close(self) -> None:
        await self.topics.close()
        await self.committed.close()
        await self.incarnation.close()


def forgetful_of(
    bootstrap: str, log_: EventLog, readers: Mapping[str, tuple[str, ...]]
) -> Forgetful:
    """A producer's view of an embedded broker (clients made on first use); `readers` as
    Committed's."""
    return Forgetful(
        log_,
        Incarnation(bootstrap, log_),
        Committed(bootstrap, log_.namespace, readers),
        Topics(bootstrap, log_.partitions),
    )


class TopicKeeper:
    """Makes each logical topic's current and next generations and deletes the old ones (see the
    module's docstring). Every step is idempotent: several keepers may run."""

    def __init__(
        self, bootstrap: str, log_: EventLog, incarnation: Incarnation, committed: Committed
    ) -> None:
        self.bootstrap = bootstrap
        self.log = log_
        self.incarnation = incarnation
        self.committed = committed
        self._admin: AIOKafkaAdminClient | None = None
        self._reader: AIOKafkaConsumer | None = None
        self.live = 0  # generations alive after the last step (a gauge)
        self.deleted = 0  # generations deleted so far (a counter)
        self.forced = 0  # of which deleted unread by some group

    @property
    def every_s(self) -> float:
        """How often a step is due: four times a period (at least a second apart)."""
        return max(1.0, self.log.rotate_s / 4)

    async def step(self, at_ms: int | None = None) -> None:
        """One look at the topics (bounded: a step that hangs on the broker is given up)."""
        try:
            await asyncio.wait_for(self._step(now_ms() if at_ms is None else at_ms), STEP_TIMEOUT_S)
        except TimeoutError:
            await self.close()  # new clients next time
            raise

    async def _step(self, at_ms: int) -> None:
        incarnation = await self.incarnation.current()
        current = self.log.generation_at(at_ms)
        admin = await self._admin_client()
        existing = set(await admin.list_topics())
        wanted: list[str] = []
        doomed: list[str] = []
        live = 0
        for logical in self.committed.readers:  # every topic of the cluster
            generations = self.log.namespace.generations(logical, existing)
            for gen in self._to_make(current, [g for i, g in generations if i == incarnation]):
                topic = self.log.topic(logical, gen, incarnation)
                if topic not in existing:
                    wanted.append(topic)
            for (inc, gen), topic in generations.items():
                if inc != incarnation:
                    doomed.append(topic)  # of a broker that forgot: nobody reads it
                elif at_ms >= self.log.written_until(gen) + int(
                    DELIVERY_SLACK_S * 1000
                ) and await self._done(logical, topic, gen, at_ms):
                    # A slack after its readers let it go (GenerationConsumer), so none commits
                    # to it once it is gone (aiokafka retries such a commit forever).
                    doomed.append(topic)
                else:
                    live += 1
        if wanted:
            await create(admin, wanted, self.log.partitions)
        if doomed:
            response = await admin.delete_topics(doomed)
            for name, code in response.topic_error_codes:
                if code not in (0, UNKNOWN_TOPIC):  # gone already: another keeper's
                    raise KafkaError(f"cannot delete topic {name}: error {code}")
            self.deleted += len(doomed)
            log.info("event log generations deleted", extra={"topics": len(doomed)})
        self.live = live + len(wanted)

    @staticmethod
    def _to_make(current: int, made: list[int]) -> range:
        """The generations to make: the current and the next, but none older than the newest
        made less one (one older may be read and deleted, never to be made again: see Topics;
        a producer writes no older one either: Forgetful)."""
        lo = current if not made else max(current, max(made) - 1)
        return range(lo, current + 2)

    async def _done(self, logical: str, topic: str, gen: int, at_ms: int) -> bool:
        """Whether `topic` may go: every group read it to its end, or it is past forced_at."""
        tps = [TopicPartition(topic, p) for p in range(self.log.partitions)]
        try:
            ends = await asyncio.wait_for(self._ends(tps), DONE_TIMEOUT_S)
        except TimeoutError:
            await self._drop_reader()  # a call cut short may leave it waiting: a new one
            ends = None
        if ends is not None and all(
            (offset or 0) >= ends[tp]
            for tp, offsets in (await self.committed.of(logical, tps)).items()
            for offset in offsets.values()
        ):
            return True  # every group read to the end (of an empty partition: nothing to read)
        if at_ms >= self.log.forced_at(gen):
            self.forced += 1
            log.warning("an unread event log generation is deleted", extra={"topic": topic})
            return True
        return False

    async def _ends(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The partitions' ends, as a fetch tells them: Tansu's ListOffsets answers the first
        offset of the last batch plus one, short of the end by the rest of that batch (a
        group whose commit was inside it looked done while records after it were unread), so
        the last batch is fetched for the high watermark its answer carries."""
        reader = await self._end_reader()
        listed = await reader.end_offsets(tps)
        batches = [tp for tp in tps if listed[tp] > 0]  # 0: no batch, an empty partition
        if batches:
            reader.assign(batches)
            for tp in batches:
                reader.seek(tp, listed[tp] - 1)
            while any(reader.highwater(tp) is None for tp in batches):  # bounded by the caller
                await reader.getmany(*batches, timeout_ms=100)
        fetched = {tp: max(listed[tp], reader.highwater(tp) or 0) for tp in batches}
        return {tp: fetched.get(tp, listed[tp]) for tp in tps}

    async def _admin_client(self) -> AIOKafkaAdminClient:
        if self._admin is None:
            admin = _admin(self.bootstrap)
            await admin.start()
            self._admin = admin
        return self._admin

    async def _end_reader(self) -> AIOKafkaConsumer:
        if self._reader is None:
            self._reader = await _started(self.bootstrap, enable_auto_commit=False)
        return self._reader

    async def _drop_reader(self) -> None:
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await self._reader.stop()
            self._reader = None

    async def close(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                await self._admin.close()
            self._admin = None
        await self._drop_reader()


class IncarnationChanged(KafkaError):
    """The broker a consumer was reading has restarted: start a new consumer."""


class GenerationConsumer:
    """A consumer of every live generation of some logical topics, on its share of their
    partitions (replica `share[0]` of `share[1]` takes the partitions p with p % n == i), with
    no group membership: its offsets are committed under its group. Duck-types the parts of
    AIOKafkaConsumer the consume loops use."""

    def __init__(
        self,
        inner: AIOKafkaConsumer,
        log_: EventLog,
        logicals: Sequence[str],
        incarnation: Incarnation,
        share: tuple[int, int] = (0, 1),
        refresh_s: float = 1.0,
    ) -> None:
        self.inner = inner
        self.log = log_
        self.logicals = tuple(logicals)
        self.incarnation = incarnation
        self.share = share
        self.refresh_s = refresh_s
        self._refreshed = 0.0
        self._assigned: set[TopicPartition] = set()
        self._listed: set[str] = set()  # the topics the broker listed at the last look
        self._unchecked: set[TopicPartition] = set()  # assigned, not yet checked: made again?
        self._let_go: set[TopicPartition] = set()  # read to their ends, never taken up again
        self._incarnation = ""  # of the topics assigned
        self._looking: asyncio.Task[tuple[str, set[TopicPartition]]] | None = None

    async def start(self) -> None:
        await self.inner.start()
        await self._apply(await self._look())

    async def _look(self) -> tuple[str, set[TopicPartition]]:
        """A look at the live generations, bounded: one that hangs on a broker that went away
        fails the consumer, which its loop starts afresh."""
        try:
            return await asyncio.wait_for(self._wanted(), CALL_TIMEOUT_S)
        except TimeoutError:
            log.warning("the consumer's assignment could not be refreshed in time")
            raise KafkaError("the consumer's assignment could not be refreshed") from None
        except Exception as exc:
            log.warning("the consumer's assignment could not be refreshed: %r", exc)
            raise

    async def _refresh(self) -> None:
        """Between reads: take up the last look's generations, and start the next look once
        `refresh_s` has passed. A look runs beside the reads, never in their way: it takes
        several round trips to the broker (the incarnation, every topic's metadata, the ends
        of the generations to let go): measured on the event-path bench's broker, 50-250 ms
        each second and ~620 ms once a generation, which records waited when reads stopped
        for it."""
        looking = self._looking
        if looking is not None and looking.done():
            self._looking = None
            await self._apply(looking.result())  # a failed look fails the consumer here
        if self._looking is None and time.monotonic() - self._refreshed >= self.refresh_s:
            self._refreshed = time.monotonic()
            self._looking = asyncio.create_task(self._look())

    async def _apply(self, looked: tuple[str, set[TopicPartition]]) -> None:
        incarnation, wanted = looked
        if self._incarnation and incarnation != self._incarnation:
            # The broker restarted and forgot: a consumer of the old one is not reused (its
            # client's state of topics and offsets that are gone got it stuck, measured); its
            # loop starts a new one.
            raise IncarnationChanged(f"the broker's incarnation is now {incarnation}")
        if wanted != self._assigned:
            if self._assigned:
                # Keep what was processed: a new assignment starts each partition at its
                # committed offset (a new one at the earliest). Not for a generation deleted
                # meanwhile: aiokafka would retry that commit until COMMIT_TIMEOUT_S, the reads
                # waiting (seen each time a deletion raced a look).
                listed = self._listed  # empty before a look listed the topics: commit all
                kept = {tp for tp in self._assigned if tp.topic in listed} if listed else None
                await self.commit(kept)
            self._unchecked = (self._unchecked & wanted) | (wanted - self._assigned)
            self.inner.assign(sorted(wanted))
            self._assigned = wanted
        self._incarnation = incarnation

    async def _from_start_if_made_again(self) -> None:
        """A partition whose group's committed offset is past its end is a topic made again
        under a name read and deleted before (a commit to the old one, which aiokafka retries
        until it lands, landed on it): read it from its start, or what it got would be passed
        over (Tansu answers a fetch past the end with nothing, not OFFSET_OUT_OF_RANGE, so
        aiokafka's reset never comes). Checked once per newly assigned partition, against the
        end its first fetch learned: Tansu's ListOffsets answers the first offset of the last
        batch plus one, so a group whose commit was inside that batch looked "past the end"
        (seen: committed 102, "end" 86) and read the whole generation again. Keepers and
        producers never make one again (Topics); this is the consumers' own guard."""
        for tp in sorted(self._unchecked):
            end = self.inner.highwater(tp)
            if end is None:
                continue  # not fetched yet
            self._unchecked.discard(tp)
            committed = await self.inner.position(tp)
            if committed > end:
                log.warning(
                    "a topic made again: read from its start",
                    extra={"topic": tp.topic, "committed": committed, "end": end},
                )
                self.inner.seek(tp, 0)

    async def _wanted(self) -> tuple[str, set[TopicPartition]]:
        """The broker's incarnation and the partitions of its live generations this consumer
        should hold."""
        incarnation = await self.incarnation.current()
        if self._incarnation and incarnation != self._incarnation:
            return incarnation, set()  # _apply ends this consumer
        at = now_ms()
        cluster = await self.inner._client.fetch_all_metadata()  # every topic, not the assigned
        topics = cluster.topics()
        self._listed = set(topics)
        self._let_go = {tp for tp in self._let_go if tp.topic in self._listed}
        mine, count = self.share
        wanted: set[TopicPartition] = set()
        for logical in self.logicals:
            for (inc, gen), topic in self.log.namespace.generations(logical, topics).items():
                if inc != incarnation:
                    continue
                for p in cluster.partitions_for_topic(topic) or ():
                    tp = TopicPartition(topic, p)
                    if p % count != mine:
                        continue
                    # Written no more and read to its end: let it go, for good (the keeper
                    # deletes it a slack later); one not read to its end yet stays until it is.
                    if tp in self._let_go:
                        continue
                    if at >= self.log.written_until(gen) + LET_GO_AFTER_MS and await self._read(tp):
                        self._let_go.add(tp)
                        continue
                    wanted.add(tp)
        return incarnation, wanted

    async def _read(self, tp: TopicPartition) -> bool:
        """Whether this consumer has read `tp` to its end: its position against the end its
        last fetch learned, with no call to the broker (the look once asked each old
        generation's end and committed offset: a generation deleted meanwhile hung it until
        the consumer restarted, and Tansu's ListOffsets end is short of the real one: above).
        One not assigned (a new consumer's) is taken up: its first fetch tells."""
        if tp not in self._assigned:
            return False
        end = self.inner.highwater(tp)
        return end is not None and await self.inner.position(tp) >= end

    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> Any:
        await self._refresh()
        if not self._assigned:
            await asyncio.sleep(timeout_ms / 1000)
            return {}
        got = await self.inner.getmany(timeout_ms=timeout_ms, max_records=max_records)
        if self._unchecked:
            await self._from_start_if_made_again()
        return got

    async def commit(self, only: set[TopicPartition] | None = None) -> None:
        """Commit what was read (of `only`'s partitions, when given). aiokafka retries a commit
        to a topic that is gone forever: bounded here, and the next refresh drops what is gone;
        nothing is committed for topics of a broker incarnation that has ended."""
        if not self._assigned or only == set():
            return
        if await self.incarnation.without_waiting() != self._incarnation:
            self._refreshed = 0.0
            return
        offsets = None
        if only is not None and only != self._assigned:
            offsets = {tp: await self.inner.position(tp) for tp in sorted(only)}
        try:
            committing = self.inner.commit() if offsets is None else self.inner.commit(offsets)
            await asyncio.wait_for(committing, COMMIT_TIMEOUT_S)
        except TimeoutError:
            log.warning("an offset commit timed out; the assignment is looked at again")
            self._refreshed = 0.0

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def highwater(self, tp: TopicPartition) -> int | None:
        end = self.inner.highwater(tp)
        return None if end is None else int(end)

    async def position(self, tp: TopicPartition) -> int:
        return int(await self.inner.position(tp))

    async def stop(self) -> None:
        if self._looking is not None:
            self._looking.cancel()
            # Its outcome is of no use now (a stop of this call itself still propagates).
            await asyncio.gather(self._looking, return_exceptions=True)
            self._looking = None
        # No commit here: a consumer stopped by a failure of its handler has positions past
        # records the handler never finished (consume_records commits what it processed).
        # Always stopped: a client left running retries its commits to forgotten topics forever.
        await self.inner.stop()
