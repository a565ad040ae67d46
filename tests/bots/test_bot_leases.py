"""Issue 17: the bots' per-table lease is redis-py's Lock (on a single Valkey and a Valkey
Cluster): one worker holds a table; only the holder renews or releases it; a worker that finds
its lease taken by another (it stalled past it) stops its bot, so a seat never has two."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from redis.exceptions import LockNotOwnedError

from services.bots import worker as bots_worker
from services.bots.worker import BotWorker
from services.contracts.redis_keys import BOT_TABLES, bot_lease_key, lobby_key
from services.contracts.seats import computer_seat

pytestmark = pytest.mark.integration


def _worker(redis: Any) -> BotWorker:
    return BotWorker(redis, "127.0.0.1:1", "credential", max_tables=10)


async def test_one_worker_holds_a_table_and_only_it_releases(redis: Any) -> None:
    a, b = _worker(redis), _worker(redis)
    held = a.lease("t1")
    assert await held.acquire(token=a.token)
    assert not await b.lease("t1").acquire(token=b.token)  # taken
    assert await redis.get("bots:lease:t1") == a.token.encode()
    stranger = b.lease("t1")
    stranger.local.token = b.token.encode()  # b believing it held the table
    with pytest.raises(LockNotOwnedError):
        await stranger.release()  # not b's to release
    assert await redis.get("bots:lease:t1") == a.token.encode()
    await held.release()
    assert await b.lease("t1").acquire(token=b.token)  # free again


async def test_a_worker_that_lost_its_lease_stops_its_bot(
    redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bots_worker, "LEASE_S", 0.3)  # renewals every 0.1 s
    a, b = _worker(redis), _worker(redis)
    lease = a.lease("t1")
    assert await lease.acquire(token=a.token)
    playing = asyncio.create_task(asyncio.sleep(3600))  # a's bot, playing the table
    a.playing["t1"] = playing
    renewing = asyncio.create_task(a._renew(lease, "t1"))
    await asyncio.sleep(0.5)  # past the TTL: a's renewals kept it
    assert await redis.get("bots:lease:t1") == a.token.encode() and not playing.done()
    await redis.delete("bots:lease:t1")  # a stalls past its lease and b takes the table
    assert await b.lease("t1").acquire(token=b.token)
    await asyncio.wait_for(renewing, 5)  # a's next renewal finds it b's: a stops
    with pytest.raises(asyncio.CancelledError):
        await playing
    assert await redis.get("bots:lease:t1") == b.token.encode()  # b's lease untouched


async def test_a_gateway_not_up_yet_is_a_warning_and_the_table_waits_for_the_next_pass(
    redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 44 item 2: a bots service that starts before its gateway (or finds it restarting)
    logs no ERROR: the next pass picks the table up (seen in `make test`: six ERROR lines a
    start while the gateway was not listening yet)."""
    seat = computer_seat("normal", "t9")
    await redis.set(lobby_key("t9"), json.dumps({"player_ids": ["alice", seat]}))
    await redis.sadd(BOT_TABLES, "t9")
    worker = _worker(redis)  # its gateway address refuses connections
    await worker.run_once()
    await asyncio.wait_for(asyncio.gather(*worker.playing.values()), 15)
    failed = [r for r in caplog.records if r.name == "bg.bots"]
    assert failed and all(r.levelno == logging.WARNING for r in failed), failed
    assert await redis.sismember(BOT_TABLES, "t9")  # still waiting for a bot
    assert await redis.get(bot_lease_key("t9")) is None  # and free for the next pass
