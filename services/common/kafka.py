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
from typing import Any

from aiokafka import AIOKafkaClient, AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.client import ConnectionGroup
from aiokafka.cluster import ClusterMetadata
from aiokafka.errors import CommitFailedError, KafkaError
from aiokafka.protocol.metadata import MetadataRequest

from services.common.backoff import Backoff, pause

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


def never_create_topics(client: AIOKafkaClient) -> None:
    """Make `client` ask for metadata with allow_auto_topic_creation=false. aiokafka (0.14) always
    sends true, so a producer after a broker restart re-created `table-events` with the broker's
    default 4 partitions instead of 8 (issue #13). This is aiokafka's `_metadata_update` with
    that one flag changed; aiokafka is pinned below 0.15."""

    async def update(cluster_metadata: ClusterMetadata, topics: Any) -> bool:
        request = MetadataRequest(list(topics) if topics else None, False)
        node_ids: list[Any] = [b.nodeId for b in client.cluster.brokers()]
        bootstrap_id = ("bootstrap", ConnectionGroup.DEFAULT)
        if bootstrap_id in client._conns:
            node_ids.append("bootstrap")
        for node_id in node_ids:
            conn = await client._get_conn(node_id)
            if conn is None:
                continue
            try:
                metadata = await conn.send(request)
            except (KafkaError, TimeoutError) as err:
                log.warning("no metadata from Kafka node %s: %r", node_id, err)
                continue
            if not metadata.brokers:
                return False
            cluster_metadata.update_metadata(metadata)
            if bootstrap_id in client._conns and len(client.cluster.brokers()):
                client._conns.pop(bootstrap_id).close()
            return True
        cluster_metadata.failed_update(None)
        return False

    client._metadata_update = update


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
            raise
        except Exception:
            if time.monotonic() - started >= HEALTHY_S:
                backoff.reset()  # a failure after a long healthy run starts the policy afresh
            delay = backoff.failed()
            log.exception(
                "consumer failed; restarting", extra={"consumer": name, "in_s": round(delay, 1)}
            )
            await pause(stop, delay)
