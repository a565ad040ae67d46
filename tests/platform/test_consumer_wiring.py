"""One helper wires the event log's consumer for every service (issue 44, item 2): its group,
client id and share, on an embedded log every live generation and on Kafka the topics."""

from __future__ import annotations

import asyncio
from typing import Any

from services.analysis.settings import load_settings
from services.common import event_log
from services.common.embedded_generations import GenerationConsumer
from services.common.kafka_log import ConsumerReader
from services.common.service import base_app
from services.contracts.topics import READERS, TABLE_EVENTS

ENV = {
    "BG_KAFKA_BOOTSTRAP": "127.0.0.1:9",
    "BG_KAFKA_NAMESPACE": "ns",
    "BG_REPLICA": "analysis-2",
    "BG_CONSUMER_SHARE": "1/2",
}


async def wired(mode: str) -> tuple[list[Any], Any]:
    settings = load_settings(ENV | {"BG_KAFKA_LOG": mode})
    app = base_app("analysis", settings)
    made: list[Any] = []

    async def consume(reader: Any, stop: asyncio.Event) -> None:
        assert isinstance(reader, ConsumerReader)
        made.append(reader.consumer)
        await stop.wait()

    events = event_log.open_event_log(settings, READERS)
    app.closes(events.close)
    start = event_log.consume_in_background(
        app, settings, events, "analysis", (TABLE_EVENTS,), consume
    )
    assert made == []  # nothing runs before the app's start hook calls it
    start()
    for _ in range(10):
        await asyncio.sleep(0)
    await app.background.close()
    await app.resources.aclose()
    return made, app


async def test_an_embedded_log_gets_its_services_share_of_every_generation() -> None:
    made, _ = await wired("embedded")
    assert len(made) == 1 and isinstance(made[0], GenerationConsumer)
    consumer = made[0]
    assert consumer.share == (1, 2) and consumer.logicals == (TABLE_EVENTS,)
    assert consumer.inner._group_id == "ns.analysis"
    assert consumer.inner._client._client_id == "analysis-2"


async def test_a_kafka_log_gets_a_group_managed_consumer_of_the_topics_themselves() -> None:
    made, _ = await wired("kafka")
    assert len(made) == 1 and not isinstance(made[0], GenerationConsumer)
    consumer = made[0]
    assert consumer._group_id == "ns.analysis"
    assert consumer._subscription.subscription.topics == {"ns.table-events"}
