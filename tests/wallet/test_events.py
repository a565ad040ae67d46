"""table-events in, wallet-events out: exactly one settlement per match; the outbox survives a
crash between commit and publish (real Tansu broker)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bg.events.v1 import events_pb2
from services.common.kafka_log import KafkaEventLog
from services.common.log_port import KEPT, Outgoing, Receipt, Unsent, Verdict
from services.common.topics import PLAIN
from services.contracts.topics import TABLE_EVENTS, WALLET_EVENTS
from services.wallet.consumer import TableEventsHandler, consume
from services.wallet.ledger import Ledger
from services.wallet.outbox import OutboxRelay
from services.wallet.schema import operations, outbox
from tests.wallet.conftest import fund

pytestmark = pytest.mark.integration


def table_event(
    match_id: str,
    seq: int,
    kind: str,
    winner_seat: int = 0,
    profile: str = "wagered",
    tournament: bool = False,
) -> bytes:
    info = events_pb2.MatchInfo(
        profile=profile, player_ids=["alice", "bob"], match_length=1,
        bet=0 if tournament else 100, tournament=tournament,
    )  # fmt: skip
    event = events_pb2.TableEvent(
        event_id=f"t-{match_id}:{seq}",
        table_id=f"t-{match_id}",
        seq=seq,
        match_id=match_id,
    )
    if kind == "match_ended":
        event.match_ended.CopyFrom(
            events_pb2.MatchEnded(info=info, winner_seat=winner_seat, reason="END_REASON_POINTS")
        )
    elif kind == "match_closed":
        event.match_closed.CopyFrom(
            events_pb2.MatchClosed(info=info, reason="END_REASON_BOTH_AWAY")
        )
    return event.SerializeToString()


async def _closings(engine: AsyncEngine, match_id: str) -> int:
    async with engine.connect() as conn:
        return int(
            await conn.scalar(
                select(func.count()).where(
                    operations.c.match_id == match_id, operations.c.kind.in_(("settle", "refund"))
                )
            )
            or 0
        )


async def test_duplicate_and_reordered_deliveries_settle_once(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    await fund(ledger, alice=1000, bob=1000)
    await ledger.escrow("e", "m1", ["alice", "bob"], 100)
    handler = TableEventsHandler(ledger)
    ended = table_event("m1", 9, "match_ended", winner_seat=1)
    closed = table_event("m1", 10, "match_closed")
    results = [await handler.handle(raw) for raw in (ended, ended, closed, ended, closed)]
    assert results == ["applied", "replayed", "escrow_closed", "replayed", "escrow_closed"]
    assert await _closings(engine, "m1") == 1
    assert await ledger.balance("bob") == 900 + 184
    # Reordered: the close arrives first, then the end: the refund wins, nothing is paid twice.
    await ledger.escrow("e2", "m2", ["alice", "bob"], 100)
    assert [
        await handler.handle(r)
        for r in (table_event("m2", 5, "match_closed"), table_event("m2", 4, "match_ended"))
    ] == [
        "applied",
        "escrow_closed",
    ]
    assert await _closings(engine, "m2") == 1


async def test_other_events_and_other_profiles_are_ignored(ledger: Ledger) -> None:
    handler = TableEventsHandler(ledger)
    assert await handler.handle(table_event("m", 1, "dice_rolled")) == "ignored"
    assert (
        await handler.handle(table_event("m", 2, "match_ended", profile="casual")) == "not_wagered"
    )
    assert await handler.handle(table_event("nomatch", 3, "match_ended")) == "unknown_match"
    for kind in ("match_ended", "match_closed"):  # a wagered tournament's: its pool pays
        assert await handler.handle(table_event("t", 4, kind, tournament=True)) == "tournament"
    assert await handler.handle(b"\xff\xff not protobuf") == "undecodable"


async def test_a_casual_cubes_take_moves_no_money_and_a_wagered_hold_unknown_is_warned(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 27, item 12: `make up` logged "table event skipped event=double_taken
    code=UNKNOWN_HOLD" during a casual match with a cube. No diamond is involved: a casual
    match has no escrow and its take no hold, so the capture is counted `not_wagered`, quietly.
    A wagered match (an escrow) whose hold is unknown at capture is a fault: warned."""
    handler = TableEventsHandler(ledger)

    def taken(match_id: str) -> bytes:
        event = events_pb2.TableEvent(event_id=f"t-{match_id}:9", table_id=f"t-{match_id}",
                                      seq=9, match_id=match_id)  # fmt: skip
        event.double_taken.CopyFrom(events_pb2.DoubleTaken(seat=1, cube=2, game_no=1))
        return event.SerializeToString()

    with caplog.at_level(logging.INFO, logger="bg.wallet.consumer"):
        assert await handler.handle(taken("casual-m")) == "not_wagered"
    assert caplog.records == []
    await fund(ledger, alice=1_000, bob=1_000)
    await ledger.escrow("escrow:wag-m", "wag-m", ["alice", "bob"], 100)
    with caplog.at_level(logging.INFO, logger="bg.wallet.consumer"):
        assert await handler.handle(taken("wag-m")) == "unknown_hold"
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "hold unknown at capture")
    ]


class _CrashingPublisher:
    """A publisher whose process dies before the broker acknowledges."""

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        raise ConnectionError("killed before the broker answered")

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        return [Verdict.READ] * len(receipts)

    async def close(self) -> None:
        return None


async def _unpublished(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int(
            await conn.scalar(select(func.count()).where(outbox.c.published_ms.is_(None))) or 0
        )


async def test_crash_between_commit_and_publish_then_restart_publishes(
    ledger: Ledger, engine: AsyncEngine, kafka_bootstrap: str
) -> None:
    await fund(ledger, alice=1000, bob=1000)
    await ledger.escrow("e", "mx", ["alice", "bob"], 100)
    crashed = OutboxRelay(engine, _CrashingPublisher(), None, 0.05)
    with pytest.raises(ConnectionError):
        await crashed.publish_once()
    assert await _unpublished(engine) == 3  # committed in the ledger, not yet on Kafka
    relay = OutboxRelay(
        engine, KafkaEventLog(kafka_bootstrap, PLAIN, False).publisher("test-relay"), None, 0.05
    )
    try:
        assert await relay.publish_once() == 3
        assert await relay.publish_once() == 0
    finally:
        await relay.close()
    assert await _unpublished(engine) == 0
    # The events are on the topic.
    group = f"check-{uuid.uuid4().hex[:8]}"
    consumer = AIOKafkaConsumer(
        WALLET_EVENTS,
        bootstrap_servers=kafka_bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    seen: set[str] = set()
    try:
        for _ in range(40):
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for record in records:
                    event = events_pb2.WalletEvent()
                    event.ParseFromString(record.value)
                    seen.add(event.kind + ":" + event.match_id)
            if "escrow:mx" in seen:
                break
    finally:
        await consumer.stop()
    assert "escrow:mx" in seen


class _AckingPublisher(_CrashingPublisher):
    """A broker that acknowledges every record at once."""

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        return [KEPT] * len(records)


async def _until_published(engine: AsyncEngine) -> None:
    for _ in range(100):  # bounded: 10 s
        if await _unpublished(engine) == 0:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the outbox rows were not published")


async def test_an_operation_wakes_the_idle_relay_and_nothing_else_does(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """The wallet wakes its relay after each operation (services/wallet/app.py), so the idle
    poll can be slow: here an hour, which no step below waits for."""
    await fund(ledger, alice=1000, bob=1000)
    relay = OutboxRelay(engine, _AckingPublisher(), None, 3600.0)
    stop = asyncio.Event()
    running = asyncio.create_task(relay.run(stop))
    try:
        await _until_published(engine)  # the first pass runs at once
        await ledger.escrow("e", "mw", ["alice", "bob"], 100)
        await asyncio.sleep(0.5)
        assert await _unpublished(engine) == 1  # the escrow's row waits: asleep for its hour
        relay.wake()
        await _until_published(engine)
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)  # a stop ends the idle wait too


async def test_published_outbox_rows_are_pruned_after_a_day_unpublished_never(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """Issue 13 req. 6: the outbox does not grow forever; a row not yet on Kafka is kept."""
    await fund(ledger, alice=1000, bob=1000)
    relay = OutboxRelay(engine, _CrashingPublisher(), None, 0.05, keep_published_s=86_400)
    async with engine.begin() as conn:
        ids = [r.id for r in (await conn.execute(select(outbox.c.id).order_by(outbox.c.id))).all()]
        await conn.execute(
            update(outbox)
            .where(outbox.c.id == ids[0])
            .values(published_ms=1, confirmed_ms=1)  # long ago, KEPT by the log
        )
    now = int(time.time() * 1000)
    assert await relay.prune(now) == 1
    assert await relay.prune(now) == 0
    assert await _unpublished(engine) == 1  # the other one waits for Kafka, however old


async def test_consumer_settles_from_the_real_topic(
    ledger: Ledger, engine: AsyncEngine, kafka_bootstrap: str
) -> None:
    match_id = f"km{uuid.uuid4().hex[:6]}"
    await fund(ledger, alice=1000, bob=1000)
    await ledger.escrow("e", match_id, ["alice", "bob"], 500)
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        raw = table_event(match_id, 7, "match_ended", winner_seat=0)
        for _ in range(3):  # at-least-once delivery: duplicates on the topic
            await producer.send_and_wait(TABLE_EVENTS, raw, key=f"t-{match_id}".encode())
    finally:
        await producer.stop()
    stop = asyncio.Event()
    handler = TableEventsHandler(ledger)
    group = f"wallet-{uuid.uuid4().hex[:8]}"
    task = asyncio.create_task(
        consume(
            handler,
            KafkaEventLog(kafka_bootstrap, PLAIN).reader(group, [TABLE_EVENTS], "t", (0, 1)),
            stop,
        )
    )
    try:
        for _ in range(200):
            if await _closings(engine, match_id):
                break
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
    assert await _closings(engine, match_id) == 1
    assert await ledger.balance("alice") == 500 + 920
