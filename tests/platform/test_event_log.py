"""Issue 25: the event log on an embedded broker that forgets
(services/common/embedded_generations.py), on a real Tansu on memory (its own process, killed -9
here) and real Valkey, with the table relay's clock in the test's hands: a table keeps its order
across generations, waits rather than jump two back, is confirmed once every group has read it
and sent again when the broker forgets it; the keeper bounds the history; a consumer follows the
generations and the broker's restarts."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from bg.events.v1 import events_pb2
from engine import profiles
from engine.machine import new_match
from services.common import event_log, kafka_log
from services.common.clock import now_ms
from services.common.embedded_generations import (
    DELIVERY_SLACK_S,
    Committed,
    EventLog,
    Forgetful,
    GenerationConsumer,
    Incarnation,
    StaleGeneration,
    TopicKeeper,
    Topics,
    create,
)
from services.common.embedded_log import EmbeddedEventLog
from services.common.topics import Namespace
from services.contracts.event_records import table_events
from services.contracts.topics import READERS, TABLE_EVENTS, TOPICS
from services.table.adapters.redis_store import TableStore
from services.table.ports import Commit, TableMeta
from services.table.relay import EventRelay
from tests.helpers import Valkey
from tests.tansu import groups_read, restart

pytestmark = pytest.mark.integration
PERIOD_MS = 10_000


class Clock:
    def __init__(self, gen: int) -> None:
        self.ms = gen * PERIOD_MS + 1_000

    def __call__(self) -> int:
        return self.ms

    def next_generation(self, n: int = 1) -> None:
        self.ms += n * PERIOD_MS


@pytest.fixture
async def parts(
    broker: list[Any], valkey_url: str
) -> AsyncIterator[tuple[TableStore, EventRelay, Forgetful, Clock]]:
    boot = broker[0].address
    log = EventLog(Namespace("n" + uuid.uuid4().hex[:6]), "embedded", PERIOD_MS / 1000, 1)
    forgetful = Forgetful(
        log,
        Incarnation(boot, log, refresh_s=0),
        Committed(boot, log.namespace, READERS),
        Topics(boot, 1),
    )
    clock = Clock(1_000_000)
    client = Valkey(valkey_url, cluster=False).client()
    await client.flushdb()
    store = TableStore(client)
    publisher = EmbeddedEventLog(boot, log, READERS, forgetful=forgetful).publisher("t-relay")
    relay = EventRelay(store, publisher, now=clock)
    yield store, relay, forgetful, clock
    await relay.close()
    await forgetful.close()
    await client.aclose()


META = TableMeta(table_id="t1", match_id="m1", player_ids=["ann", "bob"])
STATE = new_match(profiles.casual(1), b"\x01" * 16, 0).state


async def commit(store: TableStore, table_id: str, count: int = 1) -> int:
    """`count` events committed to the table (made at the first); returns its seq."""
    loaded = await store.load(table_id)
    seq = loaded.seq if loaded else 0
    events = [
        events_pb2.TableEvent(
            event_id=f"{table_id}:{seq + i + 1}", table_id=table_id, seq=seq + i + 1
        )
        for i in range(count)
    ]
    for ev in events:
        ev.turn_started.seat = 0
    result = await store.commit(Commit(
        table_id, None if loaded is None else seq, STATE, None, "",
        [e.SerializeToString() for e in events], now_ms(),
        meta=META if loaded is None else None,
        kinds=["turn_started"] * count,
    ))  # fmt: skip
    assert result.status == "OK"
    return result.seq


async def read_all(boot: str, topic: str) -> list[int]:
    """The seqs on a topic's partition 0, in order."""
    consumer = AIOKafkaConsumer(bootstrap_servers=boot, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        end = (await consumer.end_offsets([tp]))[tp]
        seqs: list[int] = []
        while await consumer.position(tp) < end:
            batch = await consumer.getmany(tp, timeout_ms=1000)
            for record in batch.get(tp, []):
                seqs += [e.seq for e in table_events(record.value, record.headers)]
        return seqs
    finally:
        await consumer.stop()


async def relay_now(relay: EventRelay, table_id: str = "t1") -> int:
    relay.committed(table_id)
    return await relay.run_once(sweep=False)


async def test_a_table_keeps_its_order_across_generations(
    parts: tuple[TableStore, EventRelay, Forgetful, Clock], broker: list[Any]
) -> None:
    store, relay, f, clock = parts
    boot, log = broker[0].address, f.log
    incarnation = await f.incarnation.current()
    gen = log.generation_at(clock())
    topic = [log.topic(TABLE_EVENTS, g, incarnation) for g in range(gen, gen + 4)]
    await commit(store, "t1", 2)
    assert await relay_now(relay) == 2
    assert await read_all(boot, topic[0]) == [1, 2]  # one record for the commit's two events
    # The next period: nobody has read generation 0, so the table keeps to it.
    clock.next_generation()
    await commit(store, "t1")
    assert await relay_now(relay) == 1
    assert await read_all(boot, topic[0]) == [1, 2, 3]
    # Every group has read it: the table moves to the current generation.
    await groups_read(boot, log, topic[0])
    await commit(store, "t1")
    assert await relay_now(relay) == 1
    assert await read_all(boot, topic[1]) == [4]
    # Two periods on with generation 1 unread: the table waits instead of jumping ahead.
    clock.next_generation(2)
    await commit(store, "t1")
    assert await relay_now(relay) == 0
    assert (await store.lease_for_relay(["t1"], "peek", 1))["t1"].relayed == 4
    await groups_read(boot, log, topic[1])
    assert await relay_now(relay) == 1  # read now: on it goes, to the current generation
    assert await read_all(boot, topic[3]) == [5]
    # Once the groups have read that too, the table is confirmed: nothing to send again.
    await groups_read(boot, log, topic[3])
    assert await relay.confirm_once() == 1
    waiting, _ = await store.unconfirmed(relay.leases.owned())
    assert waiting == {}


async def test_what_the_broker_forgot_unread_is_sent_again_and_only_that(
    parts: tuple[TableStore, EventRelay, Forgetful, Clock],
    broker: list[Any],
    tmp_path: Path,
) -> None:
    store, relay, f, clock = parts
    log = f.log
    await commit(store, "read", 3)
    await commit(store, "unread", 2)
    assert await relay_now(relay, "read") == 3
    assert await relay_now(relay, "unread") == 2
    first = await f.incarnation.current()
    topic = log.topic(TABLE_EVENTS, log.generation_at(clock()), first)
    # The groups read the "read" table's records (committing their offsets after them), then
    # the "unread" one's come: they never get to them before the broker dies.
    tp = TopicPartition(topic, 0)
    for service in READERS[TABLE_EVENTS]:
        member = AIOKafkaConsumer(
            bootstrap_servers=broker[0].address, group_id=log.namespace.group(service),
            enable_auto_commit=False,
        )  # fmt: skip
        await member.start()
        member.assign([tp])
        await member.commit({tp: 1})  # "read" went first: its record is offset 0
        await member.stop()
    assert await relay.confirm_once() == 1
    restart(broker, tmp_path)
    await f.topics.close()
    f.topics.forget()
    await f.incarnation.close()
    await f.committed.close()
    second = await f.incarnation.current()
    assert second != first  # a new broker, a new incarnation: other topic names
    await relay.confirm_once()  # finds the unread table forgotten: relayed again from consumed
    assert await relay.run_once(sweep=False) == 2
    again = log.topic(TABLE_EVENTS, log.generation_at(clock()), second)
    assert await read_all(broker[0].address, again) == [1, 2]  # "unread" only


async def _one_record_in_a_new_generation(
    keeper: TopicKeeper, f: Forgetful, clock: Clock, boot: str
) -> tuple[str, int]:
    """The keeper's first step makes the current generation; one record is written to it."""
    incarnation = await f.incarnation.current()
    start = f.log.generation_at(clock())
    await keeper.step(clock())
    producer = kafka_log.producer(boot, False, "t")
    await producer.start()
    await producer.send_and_wait(f.log.topic(TABLE_EVENTS, start, incarnation), b"x", key=b"k")
    await producer.stop()
    return incarnation, start


async def test_the_keeper_keeps_a_few_generations_and_deletes_only_what_is_read(
    parts: tuple[TableStore, EventRelay, Forgetful, Clock], broker: list[Any]
) -> None:
    _, _, f, clock = parts
    boot, log = broker[0].address, f.log
    keeper = TopicKeeper(boot, log, f.incarnation, f.committed)
    try:
        incarnation, start = await _one_record_in_a_new_generation(keeper, f, clock, boot)
        assert keeper.live == 2 * len(TOPICS)  # current and next, of every topic
        clock.ms = log.written_until(start) + int(DELIVERY_SLACK_S * 1000) + 1
        await keeper.step(clock())
        gens = log.namespace.generations(TABLE_EVENTS, await _topics(boot))
        assert (incarnation, start) in gens  # unread: kept
        assert keeper.forced == 0
        await groups_read(boot, log, log.topic(TABLE_EVENTS, start, incarnation))
        await keeper.step(clock())
        gens = log.namespace.generations(TABLE_EVENTS, await _topics(boot))
        assert (incarnation, start) not in gens and keeper.deleted >= 2
        assert len(gens) <= 4
        assert keeper.forced == 0  # read by every group: not forced
    finally:
        await keeper.close()


async def test_an_unread_generation_goes_only_when_forced_out_long_after(
    parts: tuple[TableStore, EventRelay, Forgetful, Clock], broker: list[Any]
) -> None:
    _, _, f, clock = parts
    boot, log = broker[0].address, f.log
    keeper = TopicKeeper(boot, log, f.incarnation, f.committed)
    try:
        incarnation, start = await _one_record_in_a_new_generation(keeper, f, clock, boot)
        clock.ms = log.forced_at(start) - 1
        await keeper.step(clock())
        gens = log.namespace.generations(TABLE_EVENTS, await _topics(boot))
        assert (incarnation, start) in gens and keeper.forced == 0  # unread, not yet forced
        clock.ms = log.forced_at(start)
        await keeper.step(clock())
        gens = log.namespace.generations(TABLE_EVENTS, await _topics(boot))
        assert (incarnation, start) not in gens and keeper.forced == 1  # one unread: forced
    finally:
        await keeper.close()


async def test_a_producer_whose_clock_runs_behind_never_makes_a_read_generation_again(
    parts: tuple[TableStore, EventRelay, Forgetful, Clock], broker: list[Any]
) -> None:
    """Issue 42: a generation read and deleted, made again under its name, would start at
    offset 0 under the groups' old committed offsets, which pass over what it gets (make
    partitions lost two matches' analyses so, from a table replica 30 s slow)."""
    _, _, f, clock = parts
    boot, log = broker[0].address, f.log
    keeper = TopicKeeper(boot, log, f.incarnation, f.committed)
    behind = Forgetful(
        log, Incarnation(boot, log), Committed(boot, log.namespace, READERS), Topics(boot, 1)
    )  # another process's, its clock five periods behind the keeper's
    try:
        incarnation = await f.incarnation.current()
        start = log.generation_at(clock())
        first = log.topic(TABLE_EVENTS, start, incarnation)
        await keeper.step(clock())
        producer = kafka_log.producer(boot, False, "t")
        await producer.start()
        await producer.send_and_wait(first, b"x", key=b"k")
        await groups_read(boot, log, first)
        clock.ms = log.written_until(start) + int(DELIVERY_SLACK_S * 1000) + 1
        await keeper.step(clock())
        gens = log.namespace.generations(TABLE_EVENTS, await _topics(boot))
        assert (incarnation, start) not in gens  # read, and deleted
        late = clock() - 5 * PERIOD_MS  # the first generation's time
        assert log.generation_at(late) == start
        gen, topic, _ = await behind.target(TABLE_EVENTS, late)
        assert gen == log.generation_at(clock())  # the oldest live one: the keeper's current
        await producer.send_and_wait(topic, b"y", key=b"k")
        await producer.stop()
        live = log.namespace.generations(TABLE_EVENTS, await _topics(boot))
        assert (incarnation, start) not in live and (incarnation, gen) in live
        with pytest.raises(StaleGeneration):
            await behind.topics.ensure([first])
        assert first not in await _topics(boot)
    finally:
        await keeper.close()
        await behind.close()


async def test_a_table_never_goes_back_a_generation(
    parts: tuple[TableStore, EventRelay, Forgetful, Clock], broker: list[Any]
) -> None:
    """Issue 42: a table whose relay's clock steps back (another replica's, slower) keeps to
    the generation it reached: consumers read the generations side by side, so one written
    after a newer one could be read before it."""
    store, relay, f, clock = parts
    boot, log = broker[0].address, f.log
    incarnation = await f.incarnation.current()
    gen = log.generation_at(clock())
    topic = [log.topic(TABLE_EVENTS, g, incarnation) for g in (gen, gen + 1)]
    await commit(store, "t1")
    assert await relay_now(relay) == 1
    await groups_read(boot, log, topic[0])
    clock.next_generation()
    await commit(store, "t1")
    assert await relay_now(relay) == 1
    clock.ms -= PERIOD_MS  # the clock steps back a period
    await commit(store, "t1")
    assert await relay_now(relay) == 1
    assert await read_all(boot, topic[0]) == [1]
    assert await read_all(boot, topic[1]) == [2, 3]


async def test_a_consumer_whose_handler_fails_mid_batch_gets_the_rest_again(
    broker: list[Any],
) -> None:
    """A consumer stopped by its handler's failure commits nothing: its positions are past
    records the handler never got to (they were lost so before)."""
    boot = broker[0].address
    log = EventLog(Namespace("h" + uuid.uuid4().hex[:6]), "embedded", 60.0, 1)
    producing = Forgetful(
        log, Incarnation(boot, log), Committed(boot, log.namespace, READERS), Topics(boot, 1)
    )
    reading = Incarnation(boot, log)
    producer = kafka_log.producer(boot, False, "p")
    await producer.start()
    try:
        _, topic, _ = await producing.target(TABLE_EVENTS, kafka_now())
        for n in range(20):
            await producer.send(topic, b"%d" % n, key=b"k")
        await producer.flush()
    finally:
        await producer.stop()
    got: list[int] = []
    failed: list[int] = []
    stop = asyncio.Event()

    async def handle(record: Any) -> None:
        n = int(record.value)
        if n == 5 and not failed:
            failed.append(n)
            raise RuntimeError("the handler's store went away")
        got.append(n)
        if set(got) >= set(range(20)):
            stop.set()

    def make() -> kafka_log.ConsumerReader:
        inner = kafka_log.consumer(boot, log.namespace.group("analysis"), client_id="c")
        consumer = GenerationConsumer(inner, log, [TABLE_EVENTS], reading)
        return kafka_log.ConsumerReader(consumer, log.namespace)

    try:
        await asyncio.wait_for(
            event_log.keep_consuming(
                make, lambda c: event_log.consume_records(c, handle, stop), stop, "h"
            ),
            60,
        )
    finally:
        await producing.close()
        await reading.close()
    assert failed == [5] and set(got) == set(range(20))


async def test_a_consumer_reads_a_topic_made_again_from_its_start(broker: list[Any]) -> None:
    """The consumers' own guard against a generation made again (the keepers and producers
    never make one: above). aiokafka retries a commit to a deleted topic until it succeeds, so
    one made again under the name gets the group's old offset (make partitions: 270 on a topic
    whose records were at 139 and 157); the consumer finds the group past the topic's end and
    reads it from its start."""
    boot = broker[0].address
    log = EventLog(Namespace("m" + uuid.uuid4().hex[:6]), "embedded", 60.0, 1)
    reading = Incarnation(boot, log)
    incarnation = await reading.current()
    topic = log.topic(TABLE_EVENTS, log.generation_at(kafka_now()), incarnation)
    tp = TopicPartition(topic, 0)
    topics = Topics(boot, 1)
    group = log.namespace.group("analysis")
    producer = kafka_log.producer(boot, False, "p")
    await producer.start()
    try:
        await topics.ensure([topic])
        for n in range(30):
            await producer.send(topic, b"old %d" % n, key=b"k")
        await producer.flush()
        admin = await topics._admin_client()
        await admin.delete_topics([topic])
        for _ in range(100):  # the deletion takes a moment
            if topic not in await _topics(boot):
                break
            await asyncio.sleep(0.1)
        await create(admin, [topic], 1)  # made again (what no keeper or producer does now)
        member = kafka_log.consumer(boot, group, client_id="m")
        await member.start()
        member.assign([tp])
        await member.commit({tp: 30})  # the old topic's commit, retried until it landed
        await member.stop()
        for n in range(3):
            await producer.send(topic, b"new %d" % n, key=b"k")
        await producer.flush()
    finally:
        await producer.stop()
        await topics.close()
    consumer = GenerationConsumer(
        kafka_log.consumer(boot, group, client_id="c"), log, [TABLE_EVENTS], reading
    )
    await consumer.start()
    got: list[bytes] = []
    try:
        for _ in range(30):
            batch = await consumer.getmany(timeout_ms=100)
            got += [r.value for records in batch.values() for r in records]
            if len(got) >= 3:
                break
    finally:
        await consumer.stop()
        await reading.close()
    assert got == [b"new 0", b"new 1", b"new 2"]


async def _topics(boot: str) -> list[str]:
    consumer = AIOKafkaConsumer(bootstrap_servers=boot)
    await consumer.start()
    try:
        return sorted((await consumer._client.fetch_all_metadata()).topics())
    finally:
        await consumer.stop()


async def test_a_consumer_follows_the_generations_and_the_brokers_restarts(
    broker: list[Any], tmp_path: Path
) -> None:
    boot = broker[0].address
    log = EventLog(Namespace("c" + uuid.uuid4().hex[:6]), "embedded", 1.0, 1)
    producing = Forgetful(
        log, Incarnation(boot, log), Committed(boot, log.namespace, READERS), Topics(boot, 1)
    )
    reading = Incarnation(boot, log)

    def new_consumer() -> GenerationConsumer:
        inner = kafka_log.consumer(boot, log.namespace.group("wallet"), client_id="c")
        return GenerationConsumer(inner, log, [TABLE_EVENTS], reading, refresh_s=0.2)

    consumer = new_consumer()
    await consumer.start()
    got: list[bytes] = []
    stop = asyncio.Event()
    restarts = 0

    async def consume() -> None:
        nonlocal consumer, restarts
        while not stop.is_set():
            try:
                batch = await consumer.getmany(timeout_ms=200)
                got.extend(r.value for records in batch.values() for r in records)
                await consumer.commit()
            except Exception:  # as event_log.keep_consuming does: a new consumer after a pause
                # (aiokafka's stop may end with a cancellation from inside: keep_consuming's case)
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await consumer.stop()
                await asyncio.sleep(0.5)
                consumer = new_consumer()
                restarts += 1
                with contextlib.suppress(Exception):
                    await consumer.start()

    async def send(values: range) -> None:
        producer = kafka_log.producer(boot, False, "p")
        await producer.start()
        try:
            for n in values:
                # As the outboxes do: again until the broker takes it (bounded: 90 s, a loaded
                # machine restarts a broker slowly; giving up earlier lost values here).
                deadline = time.monotonic() + 90
                while True:
                    try:
                        _, topic, _ = await producing.target(TABLE_EVENTS, kafka_now())
                        await producer.send_and_wait(topic, b"%d" % n, key=b"k")
                        break
                    except Exception:
                        assert time.monotonic() < deadline, f"the broker never took {n}"
                        producing.topics.forget()
                        await asyncio.sleep(0.2)
                await asyncio.sleep(0.05)
        finally:
            await producer.stop()

    task = asyncio.create_task(consume())
    try:
        await send(range(0, 40))  # 2 s: two or three generations
        for _ in range(600):  # (what the broker held unread would be gone with it: the
            if len(set(got)) >= 40:  # outboxes send that again, not this bare producer)
                break
            await asyncio.sleep(0.1)
        restart(broker, tmp_path)
        await send(range(40, 80))
        for _ in range(600):  # bounded: ~60 s (a loaded machine is slow to reconnect)
            if len(set(got)) >= 80:
                break
            await asyncio.sleep(0.1)
        assert set(range(80)) - {int(v) for v in got} == set()
        assert restarts >= 1  # the broker's restart made a new consumer
        now = await reading.current()
        assert all(tp.topic.endswith(f".i{now}") for tp in consumer.assignment())
    finally:
        stop.set()
        await task
        await consumer.stop()
        await producing.close()
        await reading.close()


def kafka_now() -> int:
    from services.common.clock import now_ms

    return now_ms()


async def test_committed_reads_each_groups_offsets_of_many_partitions(broker: list[Any]) -> None:
    """`Committed.of` asks each group once for every partition (one OffsetFetch): each group's
    own commits come back per partition, None where it committed nothing or the topic is not
    known, and one group's commits never stand for another's."""
    boot = broker[0].address
    namespace = Namespace("c" + uuid.uuid4().hex[:6])
    topic, missing = f"{namespace.prefix}.c3", f"{namespace.prefix}.never"
    await Topics(boot, 3).ensure([topic])
    tps = [TopicPartition(topic, p) for p in range(3)]
    readers = {TABLE_EVENTS: READERS[TABLE_EVENTS][:2]}
    first, second = readers[TABLE_EVENTS]
    commits = {first: {tps[0]: 5, tps[2]: 7}, second: {tps[1]: 3}}
    for service, offsets in commits.items():
        member = AIOKafkaConsumer(
            bootstrap_servers=boot, group_id=namespace.group(service), enable_auto_commit=False
        )
        await member.start()
        try:
            member.assign(list(offsets))
            await member.commit(offsets)
        finally:
            await member.stop()
    committed = Committed(boot, namespace, readers)
    try:
        got = await committed.of(TABLE_EVENTS, [*tps, TopicPartition(missing, 0)])
    finally:
        await committed.close()
    assert got == {
        tps[0]: {first: 5, second: None},
        tps[1]: {first: None, second: 3},
        tps[2]: {first: 7, second: None},
        TopicPartition(missing, 0): {first: None, second: None},
    }
