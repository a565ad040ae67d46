"""A test's own embedded broker (a Tansu per test: the `broker` fixture, tests/conftest.py),
killed -9 by `restart`, and the reading groups' commits a producer on a forgetful broker waits
for (the event log's tests and the tournament results')."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from infra.cluster import embedded
from services.common.embedded_generations import EventLog
from services.contracts.topics import READERS, TABLE_EVENTS


def own_broker(tmp_path: Path) -> Iterator[list[Any]]:
    """A Tansu of this test's own, on memory; [server] (the test may replace it)."""
    held = [embedded.start_tansu(tmp_path / "tansu")]
    try:
        yield held
    finally:
        held[0].stop()


def restart(broker: list[Any], tmp_path: Path) -> None:
    """kill -9 the broker and start a new one on its port: it has forgotten everything."""
    server = broker[0]
    port = int(server.address.rsplit(":", 1)[1])
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    broker[0] = embedded.start_tansu(tmp_path / f"tansu-{uuid.uuid4().hex[:4]}", port=port)


async def groups_read(boot: str, log: EventLog, topic: str, logical: str = TABLE_EVENTS) -> None:
    """Every group that reads `logical` commits the end of the topic's partition 0."""
    tp = TopicPartition(topic, 0)
    for service in READERS[logical]:
        member = AIOKafkaConsumer(
            bootstrap_servers=boot, group_id=log.namespace.group(service), enable_auto_commit=False
        )
        await member.start()
        try:
            member.assign([tp])
            end = (await member.end_offsets([tp]))[tp]
            await member.commit({tp: end})
        finally:
            await member.stop()
