"""Issue 13 req. 1: the embedded defaults are durable. Valkey (append-only file) and Tansu (on
SeaweedFS's S3 store) are killed with -9 under a running cluster; the supervisor brings them back
and nothing a player or a consumer relies on is gone: the table and its events, every Kafka
message, the topics with the partition counts they were created with."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import grpc
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.player import Player
from infra.runner import Cluster, ClusterConfig
from infra.status import collect
from services.common.topics import TABLE_EVENTS, TOPICS
from tests.helpers import retried

pytestmark = pytest.mark.e2e


async def _kafka_messages(bootstrap: str) -> dict[str, list[int]]:
    """Each topic's messages per partition, counted by reading them all (Tansu on S3 storage
    answers ListOffsets with one offset per batch, so end offsets undercount)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, request_timeout_ms=5000, enable_auto_commit=False
    )
    await consumer.start()
    try:
        await consumer.topics()
        parts = {t: sorted(consumer.partitions_for_topic(t) or ()) for t in TOPICS}
        tps = [TopicPartition(t, p) for t, ps in parts.items() for p in ps]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        counts = {tp: 0 for tp in tps}
        idle = 0
        while idle < 3:  # bounded: stops after three empty reads in a row
            batch = await consumer.getmany(timeout_ms=300, max_records=1000)
            idle = 0 if batch else idle + 1
            for tp, records in batch.items():
                counts[tp] += len(records)
        return {t: [counts[TopicPartition(t, p)] for p in ps] for t, ps in parts.items()}
    finally:
        await consumer.stop()


async def _when_kafka_is_up(bootstrap: str) -> dict[str, list[int]]:
    """The message counts once the restarted broker answers (bounded: ~60 s)."""
    for _ in range(60):
        try:
            return await _kafka_messages(bootstrap)
        except KafkaError:
            await asyncio.sleep(1.0)
    return await _kafka_messages(bootstrap)


async def _kill_and_await_restart(cluster: Cluster, data_dir: Path, name: str) -> None:
    proc = next(p for p in cluster.infra if p.name == name)
    assert proc.pid is not None
    dead = proc.pid
    os.kill(dead, signal.SIGKILL)
    for _ in range(600):  # bounded: ~60 s (SERVING: the part answers what it serves)
        rows = {r["instance"]: r for r in await collect(data_dir)}
        if rows[name]["pid"] != dead and rows[name]["status"] == "SERVING":
            assert rows[name]["restarts"] >= 1
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} did not come back")


async def test_valkey_and_kafka_killed_lose_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = (tmp_path / "cluster.log").open("w")
    cluster = Cluster(ClusterConfig(data_dir=data, base_port=0, table_replicas=1), log)
    closing = [log]
    await cluster.start()
    channel = grpc.aio.insecure_channel(
        next(i.address for i in cluster.instances if i.service == "gateway")
    )
    try:
        a, b = Player(channel, "dura-a", seed=1), Player(channel, "dura-b", seed=2)
        await a.login()
        await b.login()
        table = await a.create_table(table_pb2.TableOptions(profile="casual", match_length=3))
        await b.join(table.code)
        await a.rpc(a.stub.StartTable, matchmaking_pb2.TableRequest(table_id=table.table_id))
        before = await a.view(table.table_id)
        assert before.seq > 0
        ends: dict[str, list[int]] = {}
        for _ in range(100):  # the relay forwards the deal's events to Kafka
            ends = await _kafka_messages(cluster.kafka_bootstrap)
            if sum(ends[TABLE_EVENTS]) >= before.seq:
                break
            await asyncio.sleep(0.1)
        assert [len(ends[t]) for t in TOPICS] == list(TOPICS.values())
        assert sum(ends[TABLE_EVENTS]) >= before.seq

        await _kill_and_await_restart(cluster, data, "valkey")
        after = await retried(lambda: a.view(table.table_id), time.monotonic() + 30)
        assert after.seq == before.seq and after.position_id == before.position_id
        lobby = await retried(lambda: b.table(table.table_id), time.monotonic() + 30)
        assert lobby.table_id == table.table_id

        await _kill_and_await_restart(cluster, data, "kafka")
        again = await _when_kafka_is_up(cluster.kafka_bootstrap)
        assert [len(again[t]) for t in TOPICS] == list(TOPICS.values())  # never re-created
        for topic in TOPICS:  # every message is still there
            assert all(x >= y for x, y in zip(again[topic], ends[topic], strict=True)), topic

        # Still a working cluster: a new table is dealt and its events reach Kafka.
        second = await retried(
            lambda: a.create_table(table_pb2.TableOptions(profile="casual", match_length=1)),
            time.monotonic() + 30,
        )
        await b.join(second.code)
        await a.rpc(a.stub.StartTable, matchmaking_pb2.TableRequest(table_id=second.table_id))
        grown = False
        for _ in range(150):
            now = await _kafka_messages(cluster.kafka_bootstrap)
            if sum(now[TABLE_EVENTS]) > sum(again[TABLE_EVENTS]):
                grown = True
                break
            await asyncio.sleep(0.2)
        assert grown
    finally:
        await channel.close(None)
        await cluster.stop()
        for f in closing:
            f.close()
