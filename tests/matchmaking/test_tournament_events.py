"""Issue 29: a finished tournament's result to `tournament-events` on a real Tansu (its own
process, killed -9 here) in embedded mode: acknowledged, then known to be read once the
leaderboard's group committed past it; forgotten by a restarted broker, so published again; and
on plain Kafka mode done at the acknowledgement."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from services.common.embedded_generations import EventLog
from services.common.embedded_log import EmbeddedEventLog, Placed
from services.common.kafka_log import KafkaEventLog
from services.common.log_port import KEPT
from services.common.topics import Namespace
from services.contracts.topics import READERS, TOURNAMENT_EVENTS
from services.matchmaking.adapters.tournament_events import TournamentEvents
from tests.tansu import groups_read, restart

pytestmark = pytest.mark.integration


async def test_a_result_is_read_once_every_group_has_it_and_sent_again_if_forgotten(
    broker: list[Any], tmp_path: Path
) -> None:
    boot = broker[0].address
    log = EventLog(Namespace("n" + uuid.uuid4().hex[:6]), "embedded", 60.0, 1)
    embedded = EmbeddedEventLog(boot, log, READERS)
    events = TournamentEvents(embedded.publisher("t-results"))
    try:
        sent = await events.publish("u1", b"result")
        placed = Placed.of(sent)  # the embedded log's receipt: where the record went
        assert placed is not None and placed.incarnation and placed.offset == 0
        assert await events.read(sent) is None  # nobody has read it yet
        topic = log.topic(TOURNAMENT_EVENTS, placed.gen, placed.incarnation)
        await groups_read(boot, log, topic, TOURNAMENT_EVENTS)
        assert await events.read(sent) is True
        restart(broker, tmp_path)  # a broker killed -9 forgets everything: it must go again
        await events.close()
        await embedded.close()
        embedded = EmbeddedEventLog(boot, log, READERS)  # a new process's clients
        events = TournamentEvents(embedded.publisher("t-results"))
        assert await events.read(sent) is False
        again = Placed.of(await events.publish("u1", b"result"))
        assert again is not None and again.incarnation != placed.incarnation
    finally:
        await events.close()
        await embedded.close()


async def test_on_kafka_mode_a_result_is_done_at_the_acknowledgement(broker: list[Any]) -> None:
    boot = broker[0].address
    namespace = Namespace("k" + uuid.uuid4().hex[:6])
    admin_log = EventLog(namespace, "kafka")
    admin = AIOKafkaAdminClient(bootstrap_servers=boot)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(admin_log.namespace.topic(TOURNAMENT_EVENTS), 1, 1)])
    finally:
        await admin.close()
    events = TournamentEvents(KafkaEventLog(boot, namespace, False).publisher("k-results"))
    try:
        sent = await events.publish("u2", b"result")
        assert sent == KEPT and await events.read(sent) is True
    finally:
        await events.close()
