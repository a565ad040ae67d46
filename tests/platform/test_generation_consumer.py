"""GenerationConsumer's look at the live generations runs beside its reads (fakes for the
broker: what is shown is the order of the consumer's own steps, not the broker's)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import TopicPartition

from services.common.clock import now_ms
from services.common.embedded_generations import EventLog, GenerationConsumer, IncarnationChanged
from services.common.topics import Namespace
from services.contracts.topics import TABLE_EVENTS

LOG = EventLog(Namespace("t"), "embedded", 60.0, 1)


def topic(ahead: int, incarnation: str = "a1") -> str:
    """A generation `ahead` periods after the current one (a negative one is written no more)."""
    return LOG.topic(TABLE_EVENTS, LOG.generation_at(now_ms()) + ahead, incarnation)


class Metadata:
    def __init__(self, topics: list[str]) -> None:
        self._topics = topics

    def topics(self) -> set[str]:
        return set(self._topics)

    def partitions_for_topic(self, name: str) -> set[int]:
        return {0} if name in self._topics else set()


class Client:
    def __init__(self, inner: Inner) -> None:
        self.inner = inner

    async def fetch_all_metadata(self) -> Metadata:
        return Metadata(self.inner.topics)


class Inner:
    """The parts of AIOKafkaConsumer GenerationConsumer uses; records queued by the test."""

    def __init__(self, topics: list[str]) -> None:
        self.topics = topics
        self._client = Client(self)
        self.steps: list[str] = []
        self.queued: dict[TopicPartition, list[str]] = {}
        self.positions: dict[TopicPartition, int] = {}
        self.ends: dict[TopicPartition, int] = {}

    async def start(self) -> None:
        self.steps.append("start")

    def assign(self, tps: list[TopicPartition]) -> None:
        self.steps.append("assign " + ",".join(tp.topic for tp in tps))

    async def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        self.steps.append("commit" + ("" if offsets is None else " " + ",".join(
            tp.topic for tp in offsets)))  # fmt: skip

    async def position(self, tp: TopicPartition) -> int:
        return self.positions.get(tp, 0)

    def highwater(self, tp: TopicPartition) -> int | None:
        """The end the last fetch of `tp` learned (None: not fetched yet)."""
        return self.ends.get(tp)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.steps.append(f"seek {tp.topic} {offset}")
        self.positions[tp] = offset

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        raise AssertionError("Tansu's ListOffsets is short of the end: never asked")

    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> Any:
        out, self.queued = self.queued, {}
        return out

    async def stop(self) -> None:
        self.steps.append("stop")


class Incarnation:
    """The broker's incarnation, each read held until the test lets it through."""

    def __init__(self) -> None:
        self.value = "a1"
        self.gate = asyncio.Event()
        self.gate.set()
        self.reads = 0

    async def current(self, fresh: bool = False) -> str:
        self.reads += 1
        await self.gate.wait()
        return self.value

    async def without_waiting(self) -> str:
        return self.value


async def turns(n: int = 10) -> None:
    """Let the tasks under way run as far as they can."""
    for _ in range(n):
        await asyncio.sleep(0)


async def started(inner: Inner, incarnation: Incarnation) -> GenerationConsumer:
    consumer = GenerationConsumer(inner, LOG, [TABLE_EVENTS], incarnation, refresh_s=0.0)  # type: ignore[arg-type]
    await consumer.start()
    return consumer


async def test_reads_go_on_while_a_look_at_the_generations_hangs() -> None:
    inner, incarnation = Inner([topic(1)]), Incarnation()
    consumer = await started(inner, incarnation)
    assert inner.steps == ["start", "assign " + topic(1)]
    incarnation.gate.clear()  # the next look hangs on the broker
    await consumer.getmany()  # starts it
    await turns()
    assert incarnation.reads == 2
    tp = TopicPartition(topic(1), 0)
    for n in range(3):  # reads are answered while the look is out
        inner.queued = {tp: [f"r{n}"]}
        assert await consumer.getmany() == {tp: [f"r{n}"]}
    assert incarnation.reads == 2  # one look at a time
    inner.topics.append(topic(2))  # the keeper made the next generation
    incarnation.gate.set()
    await turns()
    await consumer.getmany()  # takes up what the look found: the processed kept, then both
    assert inner.steps[-2:] == ["commit", "assign " + ",".join(sorted([topic(1), topic(2)]))]
    assert consumer.assignment() == {tp, TopicPartition(topic(2), 0)}
    await consumer.stop()


async def test_a_look_that_finds_a_restarted_broker_fails_the_next_read() -> None:
    inner, incarnation = Inner([topic(1)]), Incarnation()
    consumer = await started(inner, incarnation)
    await consumer.getmany()  # a look starts
    incarnation.value = "b2"
    inner.topics[:] = [topic(1, "b2")]
    await turns()
    with pytest.raises(IncarnationChanged):
        for _ in range(3):  # the look's answer is taken up by a read after it is in
            await consumer.getmany()
            await turns()
    assert consumer.assignment() == {TopicPartition(topic(1), 0)}  # nothing of the new one
    await consumer.stop()


async def test_stop_ends_a_look_under_way() -> None:
    inner, incarnation = Inner([topic(1)]), Incarnation()
    consumer = await started(inner, incarnation)
    incarnation.gate.clear()
    await consumer.getmany()
    await consumer.stop()  # does not wait on the hung look
    assert inner.steps[-1] == "stop"


async def test_a_generation_deleted_before_the_look_is_not_committed() -> None:
    # Issue 44, item 2: aiokafka retries a commit to a partition the broker no longer knows
    # until the commit's bound (5 s of reads waiting, and an ERROR line per retry).
    inner, incarnation = Inner([topic(1), topic(2)]), Incarnation()
    consumer = await started(inner, incarnation)
    inner.topics.remove(topic(1))  # read, and deleted by the keeper meanwhile
    inner.topics.append(topic(3))
    await consumer.getmany()  # a look starts
    await turns()
    await consumer.getmany()  # takes it up
    assert inner.steps[-2:] == [
        "commit " + topic(2),
        "assign " + ",".join(sorted([topic(2), topic(3)])),
    ]
    await consumer.stop()


async def test_an_old_generation_is_let_go_only_once_read_to_the_end_a_fetch_learned() -> None:
    # Tansu's ListOffsets answers the last batch's first offset + 1: a position inside that
    # batch looked done, and the rest of the batch was never read by the group.
    old = TopicPartition(topic(-3), 0)  # written no more: its writers moved on two periods ago
    inner, incarnation = Inner([old.topic, topic(0)]), Incarnation()
    consumer = await started(inner, incarnation)
    assert old in consumer.assignment()  # not fetched yet: kept
    inner.ends[old], inner.positions[old] = 110, 102  # read into its last batch, not through
    await consumer.getmany()
    await turns()
    await consumer.getmany()
    assert old in consumer.assignment()
    inner.positions[old] = 110
    await consumer.getmany()
    await turns()
    await consumer.getmany()
    assert consumer.assignment() == {TopicPartition(topic(0), 0)}  # let go, what it read kept
    assert inner.steps[-2:] == ["commit", "assign " + topic(0)]
    await consumer.stop()


async def test_a_partition_is_read_from_its_start_only_when_past_the_end_a_fetch_learned() -> None:
    made_again, inside = TopicPartition(topic(0), 0), TopicPartition(topic(1), 0)
    inner, incarnation = Inner([made_again.topic, inside.topic]), Incarnation()
    inner.positions = {made_again: 30, inside: 102}  # the groups' committed offsets
    consumer = await started(inner, incarnation)
    await consumer.getmany()  # not fetched yet: nothing known
    assert not any(step.startswith("seek") for step in inner.steps)
    inner.ends = {made_again: 3, inside: 110}  # their first fetches' high watermarks
    await consumer.getmany()
    assert [step for step in inner.steps if step.startswith("seek")] == [f"seek {topic(0)} 0"]
    inner.positions[inside] = 200  # checked once, when first fetched
    inner.ends[inside] = 110
    await consumer.getmany()
    assert [step for step in inner.steps if step.startswith("seek")] == [f"seek {topic(0)} 0"]
    await consumer.stop()


async def test_a_generation_let_go_is_not_taken_up_again() -> None:
    # Not assigned, a partition is taken up to learn its end from a fetch: one this consumer
    # let go must not be, or it comes back each look until the keeper deletes it under it.
    old = TopicPartition(topic(-3), 0)
    inner, incarnation = Inner([old.topic, topic(0)]), Incarnation()
    consumer = await started(inner, incarnation)
    inner.ends[old] = inner.positions[old] = 7
    for _ in range(3):
        await consumer.getmany()
        await turns()
    assert consumer.assignment() == {TopicPartition(topic(0), 0)}
    assert sum(step.startswith("assign") for step in inner.steps) == 2
    await consumer.stop()
