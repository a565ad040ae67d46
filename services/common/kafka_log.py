"""The event log port on production Kafka (BG_KAFKA_LOG=kafka): one topic per logical name,
group-managed consumers, retention by the broker. A record Kafka acknowledged (acks=all) is
kept: every receipt is KEPT, so a publisher has nothing to ask later. Also the parts both
adapters share: a producer made on first use that sends a batch and waits for every
acknowledgement, and a reader that turns an aiokafka-shaped consumer's records into logical
ones."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import CommitFailedError

from services.common.kafka_clients import never_create_topics
from services.common.log_port import (
    KEPT,
    Housekeeper,
    Incoming,
    Outgoing,
    Reader,
    Receipt,
    Unsent,
    Verdict,
)
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


class Sender:
    """A producer made on first use (inside the running loop) that sends a batch in order and
    waits for every acknowledgement: one produce request per partition, not one per record."""

    def __init__(self, bootstrap: str, idempotent: bool, client_id: str) -> None:
        self.bootstrap = bootstrap
        self.idempotent = idempotent
        self.client_id = client_id
        self._producer: Any = None  # aiokafka: untyped

    async def send(self, batch: Sequence[tuple[str, Outgoing]]) -> list[tuple[int, int]]:
        """Each (topic, record) sent; their (partition, offset), in order. Every future is
        awaited even when one fails, so none is left with an unretrieved exception; then the
        first failure is raised."""
        if not batch:
            return []
        if self._producer is None:
            made = producer(self.bootstrap, self.idempotent, self.client_id)
            await made.start()
            self._producer = made
        futures = [
            await self._producer.send(
                topic, value=r.value, key=r.key, headers=list(r.headers) or None
            )
            for topic, r in batch
        ]
        acks = await asyncio.gather(*futures, return_exceptions=True)
        if failed := next((a for a in acks if isinstance(a, BaseException)), None):
            raise failed
        metas: list[Any] = acks  # aiokafka's RecordMetadata each (a failure raised above)
        return [(int(m.partition), int(m.offset)) for m in metas]

    async def close(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None


class KafkaPublisher:
    """Every record to its logical topic's one topic; acknowledged is kept."""

    def __init__(self, sender: Sender, namespace: Namespace) -> None:
        self.sender = sender
        self.namespace = namespace

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        # A key's records share a partition: in order without `follows`.
        await self.sender.send([(self.namespace.topic(r.logical), r) for r in records])
        return [KEPT] * len(records)

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        return [Verdict.READ] * len(receipts)  # retained by the broker: read or readable

    async def close(self) -> None:
        await self.sender.close()


class ConsumerReader:
    """A Reader on an aiokafka-shaped consumer (aiokafka's own, or an embedded log's
    GenerationConsumer): records in logical names, commits, lag."""

    def __init__(self, consumer: Any, namespace: Namespace) -> None:
        self.consumer = consumer
        self.namespace = namespace

    async def start(self) -> None:
        await self.consumer.start()

    async def poll(self, timeout_ms: int, max_records: int) -> list[Incoming]:
        batches = await self.consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        return [
            Incoming(self.namespace.logical(r.topic), r.key, r.value, r.headers or (), r.timestamp)
            for records in batches.values()
            for r in records
        ]

    async def commit(self) -> None:
        try:
            await self.consumer.commit()
        except CommitFailedError:
            # The group rebalanced under us: the partitions' new owner reads on from the last
            # commit (and dedupes). Going on is right; restarting the consumer would join as
            # a new member and rebalance the group again, which failed the next member's
            # commit: the storm the soak saw with two wallets and two leaderboards.
            log.info("offsets not committed: the group rebalanced; their new owner re-reads")

    async def behind(self) -> int:
        total = 0
        for tp in self.consumer.assignment():
            end = self.consumer.highwater(tp)
            if end is not None:
                total += max(0, end - await self.consumer.position(tp))
        return total

    async def stop(self) -> None:
        await self.consumer.stop()


class KafkaEventLog:
    """The port on production Kafka (services/common/log_port.py)."""

    def __init__(self, bootstrap: str, namespace: Namespace, idempotent: bool = True) -> None:
        self.bootstrap = bootstrap
        self.namespace = namespace
        self.idempotent = idempotent

    def publisher(self, client_id: str) -> KafkaPublisher:
        return KafkaPublisher(Sender(self.bootstrap, self.idempotent, client_id), self.namespace)

    def reader(
        self, service: str, logicals: Sequence[str], client_id: str, share: tuple[int, int]
    ) -> Reader:
        # Group-managed: the broker shares the partitions among the group's members.
        topics = [self.namespace.topic(t) for t in logicals]
        made = consumer(self.bootstrap, self.namespace.group(service), *topics, client_id=client_id)
        return ConsumerReader(made, self.namespace)

    def housekeeper(self) -> Housekeeper | None:
        return None  # the broker's retention keeps the history bounded

    async def close(self) -> None:
        return None
