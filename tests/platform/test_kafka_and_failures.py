"""Issue 13: no client of ours creates a topic; store and network failures are UNAVAILABLE."""

from __future__ import annotations

import asyncio

import grpc
import pytest
import redis.asyncio as redis_asyncio
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaTimeoutError, UnknownTopicOrPartitionError
from redis import exceptions as redis_errors
from sqlalchemy import exc as sql_errors

from infra.cluster.embedded import create_topics
from infra.cluster.valkey_cluster import RunningCluster
from services.common import kafka_log
from services.common.connections import redis_client
from services.common.errors import InvalidArgument, infrastructure_failure

pytestmark = pytest.mark.integration
PROBE = "probe-no-auto-create"  # its own topic: the session broker's topics are shared


async def _topics(bootstrap: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def test_a_producer_never_creates_a_missing_topic(kafka_bootstrap: str) -> None:
    """A broker restarted on memory storage re-created `table-events` with its default partition
    count when the first producer asked for it; ours asks with allow_auto_topic_creation=false."""
    await create_topics(kafka_bootstrap, {PROBE: 1})
    producer = kafka_log.producer(kafka_bootstrap, False, "no-auto-create")
    await producer.start()
    try:
        with pytest.raises((UnknownTopicOrPartitionError, KafkaTimeoutError)):
            await producer.send_and_wait("no-such-topic", b"x")
        sent = await producer.send_and_wait(PROBE, b"x", key=b"t1")  # an existing topic: fine
        assert sent.topic == PROBE
    finally:
        await producer.stop()
    topics = await _topics(kafka_bootstrap)
    assert "no-such-topic" not in topics and PROBE in topics


async def test_a_dead_redis_connection_is_retried_on_a_new_one(valkey_url: str) -> None:
    """After Valkey restarts every pooled connection is dead; the next command must not fail."""
    client = redis_client(valkey_url)
    admin = redis_asyncio.Redis.from_url(valkey_url)
    try:
        await client.set("retry:probe", "1")
        name = "bg-retry-probe"
        await client.client_setname(name)  # on whichever pooled connection served it
        clients = await admin.client_list()
        for c in clients:
            if c.get("name") == name:
                await admin.client_kill_filter(_id=c["id"])
        for _ in range(5):  # every pooled connection gets used at least once
            assert await client.get("retry:probe") == b"1"
    finally:
        await client.aclose()
        await admin.aclose()


async def test_a_burst_beyond_the_cluster_pool_queues_instead_of_failing(
    valkey_cluster: RunningCluster,
) -> None:
    """Issue 14 soak: thousands of Play streams opening at once made redis-py's cluster client
    fail with MaxConnectionsError (its pools do not wait, the plain client's do). With the
    bound in services.common.connections, 400 concurrent commands through 16 connections all
    land."""
    client = redis_client(valkey_cluster.url, max_connections=16, cluster=True)
    try:
        await client.initialize()
        keys = [f"burst:{{s{i % 50}}}:{i}" for i in range(400)]
        await asyncio.gather(*(client.set(k, "1", ex=60) for k in keys))
        pipes = []
        for i in range(50):
            pipe = client.pipeline()
            pipe.get(keys[i]).get(keys[i + 50])
            pipes.append(pipe.execute())
        assert all(r == [b"1", b"1"] for r in await asyncio.gather(*pipes))
        assert sum(await asyncio.gather(*(client.exists(k) for k in keys))) == 400
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (redis_errors.ConnectionError("Connection closed by server."), "STORE_UNAVAILABLE"),
        (redis_errors.BusyLoadingError("LOADING"), "STORE_UNAVAILABLE"),
        (redis_errors.TimeoutError("timed out"), "STORE_UNAVAILABLE"),
        (redis_errors.ResponseError("OOM command not allowed"), "STORE_FULL"),
        (sql_errors.OperationalError("SELECT 1", {}, Exception("gone")), "LEDGER_UNAVAILABLE"),
        (ConnectionRefusedError(111, "refused"), "UNAVAILABLE"),
    ],
)
def test_store_and_network_failures_are_unavailable(exc: Exception, code: str) -> None:
    mapped = infrastructure_failure(exc)
    assert mapped is not None
    assert (mapped.code, mapped.status) == (code, grpc.StatusCode.UNAVAILABLE)


@pytest.mark.parametrize(
    "exc",
    [ValueError("bug"), redis_errors.ResponseError("WRONGTYPE"), InvalidArgument("X", "y")],
)
def test_other_failures_are_not_disguised_as_outages(exc: Exception) -> None:
    assert infrastructure_failure(exc) is None


async def test_a_wallet_that_cannot_be_reached_is_unavailable_to_the_table() -> None:
    """Issue 13 req. 3: the table's wallet calls fail as retryable UNAVAILABLE (never UNKNOWN),
    so an offer or a boost during a wallet outage is refused and can be sent again."""
    from infra.cluster.embedded import free_port
    from services.common.errors import ServiceError
    from services.table.adapters.grpc_wallet import GrpcWallet

    async with grpc.aio.insecure_channel(f"127.0.0.1:{free_port()}") as nowhere:
        wallet = GrpcWallet(nowhere, timeout_s=2)
        for call in (
            wallet.hold_raise("raise:m:1:2", "m", 2),
            wallet.hold_spend("boost:m:1:0:1", "ann", 10, "boost", "m"),
            wallet.capture("raise:m:1:2"),
        ):
            with pytest.raises(ServiceError) as err:
                await call
            assert err.value.status == grpc.StatusCode.UNAVAILABLE
