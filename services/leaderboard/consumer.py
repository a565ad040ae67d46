"""Consumes table-events and wallet-events into the boards; and `rebuild` replays both topics
from the start into empty stores."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from bg.events.v1 import events_pb2
from services.common import kafka
from services.common.topics import PLAIN, TABLE_EVENTS, WALLET_EVENTS, Namespace
from services.leaderboard import boards
from services.leaderboard.effects import Effects, table_effects, wallet_effects
from services.leaderboard.store import BoardRepository

log = logging.getLogger("bg.leaderboard")


class EventHandler:
    """One event in: decoded, its effects worked out, applied to the boards once."""

    def __init__(
        self, store: BoardRepository, season_ms: int = boards.WEEK_MS, metrics: Any = None
    ) -> None:
        self.store = store
        self.season_ms = season_ms
        self.metrics = metrics

    async def handle(self, topic: str, raw: bytes) -> str:
        try:
            if topic == TABLE_EVENTS:
                t_event = events_pb2.TableEvent()
                t_event.ParseFromString(raw)
                event_id, at_ms = t_event.event_id, t_event.at_ms
                kind = t_event.WhichOneof("body") or "other"
                fx: Effects = table_effects(t_event, self.season_ms)
            else:
                w_event = events_pb2.WalletEvent()
                w_event.ParseFromString(raw)
                event_id, at_ms, kind = w_event.event_id, w_event.at_ms, f"wallet_{w_event.kind}"
                fx = wallet_effects(w_event, self.season_ms)
        except Exception:
            log.error("undecodable event skipped", extra={"topic": topic, "size": len(raw)})
            return self._count("undecodable", "undecodable")
        if kind in ("match_ended", "match_closed"):
            await self.store.archive(t_event)  # the match history players keep
        if not fx.deltas and not fx.rated:
            return self._count(kind, "ignored")
        applied = await self.store.apply(event_id, at_ms, fx)
        return self._count(kind, "applied" if applied else "duplicate")

    def _count(self, kind: str, result: str) -> str:
        if self.metrics is not None:
            self.metrics.consumed.labels(kind, result).inc()
        return result


async def consume(
    handler: EventHandler,
    consumer: Any,
    stop: asyncio.Event,
    lag: Any = None,
    namespace: Namespace = PLAIN,
) -> None:
    await consumer.start()
    committer = kafka.Committer(consumer)
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=500, max_records=500)
            for records in batches.values():
                for record in records:
                    await handler.handle(namespace.logical(record.topic), record.value)
            await committer.tick(bool(batches))
            if lag is not None:
                total = 0
                for tp in consumer.assignment():
                    end = consumer.highwater(tp)
                    if end is not None:
                        total += max(0, end - await consumer.position(tp))
                lag.set(total)
        await committer.flush()
    finally:
        await consumer.stop()


async def rebuild(handler: EventHandler, bootstrap: str, namespace: Namespace = PLAIN) -> int:
    """Empty the stores, then apply both topics from their first offset to their end."""
    await handler.store.reset()
    applied = 0
    async for topic, raw in read_all(bootstrap, namespace):
        applied += await handler.handle(topic, raw) == "applied"
    await handler.store.resync()
    return applied


async def replay_player(
    handler: EventHandler, bootstrap: str, player_id: str, namespace: Namespace = PLAIN
) -> dict[str, int]:
    """Apply again every event of one player, from both topics' start: the store takes each
    event id once, so what was applied stays as it is and only what was missed lands."""
    counts = {"events": 0, "applied": 0, "duplicates": 0}
    async for topic, raw in read_all(bootstrap, namespace):
        if not involves(topic, raw, player_id):
            continue
        counts["events"] += 1
        result = await handler.handle(topic, raw)
        if result in ("applied", "duplicate"):
            counts["applied" if result == "applied" else "duplicates"] += 1
    return counts


def involves(topic: str, raw: bytes, player_id: str) -> bool:
    """Whether an event (by logical topic) concerns `player_id`."""
    try:
        if topic == TABLE_EVENTS:
            t_event = events_pb2.TableEvent()
            t_event.ParseFromString(raw)
            kind = t_event.WhichOneof("body")
            body = getattr(t_event, kind) if kind else None
            info = getattr(body, "info", None)
            return info is not None and player_id in info.player_ids
        w_event = events_pb2.WalletEvent()
        w_event.ParseFromString(raw)
    except Exception:
        return False
    return w_event.winner_id == player_id or player_id in w_event.player_deltas


async def read_all(
    bootstrap: str, namespace: Namespace = PLAIN
) -> AsyncIterator[tuple[str, bytes]]:
    """Every message of both topics from the first offset to the end, as (logical topic, bytes),
    without a consumer group."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [
            TopicPartition(topic, p)
            for topic in (namespace.topic(TABLE_EVENTS), namespace.topic(WALLET_EVENTS))
            for p in (consumer.partitions_for_topic(topic) or await _partitions(consumer, topic))
        ]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)

        async def behind() -> bool:
            for tp in partitions:
                if await consumer.position(tp) < ends[tp]:
                    return True
            return False

        # Until every partition is past the end offset it had at the start AND two reads in a
        # row find nothing: Tansu on S3 storage answers ListOffsets with a stale end, so the
        # end offsets alone would stop the replay early.
        idle = 0
        while idle < 2 or await behind():
            batches = await consumer.getmany(timeout_ms=1000, max_records=1000)
            idle = 0 if batches else idle + 1
            for records in batches.values():
                for record in records:
                    yield namespace.logical(record.topic), record.value
    finally:
        await consumer.stop()


async def _partitions(consumer: Any, topic: str) -> set[int]:
    await consumer._client.force_metadata_update()  # aiokafka has no public call for this
    return consumer.partitions_for_topic(topic) or set()
