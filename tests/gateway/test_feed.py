"""The gateway's table feed on real Valkey: one subscription per table fanned out to every local
stream, the last one out unsubscribes, and a broken pub/sub connection tells every stream to
refill from the table's stream (pub/sub is at most once)."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis_asyncio

from bg.table.v1 import table_pb2
from services.contracts.redis_keys import (
    seat_channel,
    stream_key,
    table_of_channel,
    update_channel,
)
from services.gateway.feed import GAP, Answer, Subscription, TableFeed
from services.gateway.live_streams import LiveStreams, Queue, stream_id

pytestmark = [pytest.mark.integration, pytest.mark.single_valkey]


async def _publish(redis: redis_asyncio.Redis, table_id: str, seq: int) -> None:
    update = table_pb2.TableUpdate(table_id=table_id, seq=seq)
    await redis.publish(update_channel(table_id), update.SerializeToString())


async def _next(sub: Subscription) -> table_pb2.TableUpdate | None:
    item = await asyncio.wait_for(sub.queue.get(), 5)
    assert not isinstance(item, Answer), "no command was sent here"
    return item


async def _update(sub: Subscription) -> table_pb2.TableUpdate:
    update = await _next(sub)
    assert update is not None, "a gap, not an update"
    return update


async def _subscribers(redis: redis_asyncio.Redis, table_id: str) -> int:
    counts = await redis.pubsub_numsub(update_channel(table_id))
    return int(counts[0][1])


async def test_one_subscription_fans_out_to_every_local_stream(
    redis: redis_asyncio.Redis,
) -> None:
    feed = TableFeed(redis)
    try:
        seats = [await feed.subscribe("f1"), await feed.subscribe("f1")]
        other = await feed.subscribe("f2")
        assert await _subscribers(redis, "f1") == 1  # one Redis subscription for both streams
        await _publish(redis, "f1", 7)
        for sub in seats:
            got = await _next(sub)
            assert got is not None and got.seq == 7
        assert other.queue.empty()  # another table's stream hears nothing of it
        await feed.unsubscribe(seats[0])
        assert await _subscribers(redis, "f1") == 1  # still one stream on it
        await feed.unsubscribe(seats[1])
        for _ in range(50):
            if await _subscribers(redis, "f1") == 0:
                break
            await asyncio.sleep(0.05)
        assert await _subscribers(redis, "f1") == 0
    finally:
        await feed.close()


async def test_a_broken_connection_asks_every_stream_to_refill(
    redis: redis_asyncio.Redis,
) -> None:
    feed = TableFeed(redis, retry_s=0.05)
    try:
        sub = await feed.subscribe("f3")
        await _publish(redis, "f3", 1)
        assert (await _update(sub)).seq == 1
        await redis.client_kill_filter(_type="pubsub")  # the feed's connection dies
        # The services' client connects again and subscribes again by itself (its retry
        # policy): no error reaches the feed, yet updates may have been lost: refill.
        assert await _next(sub) is GAP
        for _ in range(50):  # and the feed is subscribed again
            if await _subscribers(redis, "f3") == 1:
                break
            await asyncio.sleep(0.05)
        await _publish(redis, "f3", 2)
        assert (await _update(sub)).seq == 2
    finally:
        await feed.close()


async def test_a_new_stream_takes_the_seat_from_older_ones_on_every_gateway(
    redis: redis_asyncio.Redis,
) -> None:
    """Two gateways' feeds on one Valkey: a Play stream opening on either ends the same
    player's older streams to that table on both (SEAT_TAKEN), and nobody else's."""
    lives = [LiveStreams(), LiveStreams()]
    feeds = [TableFeed(redis, on_seat=live.taken) for live in lives]
    queues: dict[str, Queue] = {name: asyncio.Queue() for name in ("old1", "old2", "cam", "new")}
    try:
        for feed in feeds:
            await feed.subscribe("s1")
        old1, old2 = stream_id(), stream_id()
        lives[0].opened("ann", queues["old1"], "s1", old1)
        lives[1].opened("ann", queues["old2"], "s1", old2)
        lives[1].opened("cam", queues["cam"], "s1", stream_id())
        newest = stream_id()
        lives[1].opened("ann", queues["new"], "s1", newest)
        await feeds[1].take_seat("s1", "ann", newest)
        for name in ("old1", "old2"):
            told = await asyncio.wait_for(queues[name].get(), 5)
            assert told is not None and told.error.error.code == "SEAT_TAKEN"
            assert await asyncio.wait_for(queues[name].get(), 5) is None  # and it ends
        # A late notice of an older stream ends nothing newer (two tabs opened at once).
        await feeds[0].take_seat("s1", "ann", old1)
        await asyncio.sleep(0.3)
        assert queues["new"].empty() and queues["cam"].empty()
        assert table_of_channel(seat_channel("s1")) == table_of_channel(update_channel("s1"))
    finally:
        for feed in feeds:
            await feed.close()


async def test_the_last_seq_is_the_tables_last_event_or_none_without_a_stream(
    redis: redis_asyncio.Redis,
) -> None:
    """What a refill asks first (seat_relay.py): one read, no view."""
    feed = TableFeed(redis)
    try:
        assert await feed.last_seq("f3") is None
        for seq in (1, 2, 3):
            await redis.xadd(stream_key("f3"), {"e": b"", "k": "x"}, id=f"{seq}-0")
        assert await feed.last_seq("f3") == 3
    finally:
        await feed.close()
