"""The lean client the table's commit goes by (services/common/lean_redis.py), on real Valkey
servers: replies matched to their calls when many are in flight on its one connection, a
caller that gives up not shifting the others' replies, redis-py's errors (a script Redis lacks
loaded and run, an error reply raised as redis-py's class, not retried), a frozen node timed
out and a new connection made once it thaws, a restarted one (kill -9) reached again by the
call's retries, and a password and database from the URL."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from redis import exceptions as redis_errors

from infra.cluster import embedded
from services.common.connections import redis_client
from services.common.lean_redis import LeanRedis
from services.table.adapters.redis_store import TableStore

pytestmark = pytest.mark.integration

ECHO = "return {ARGV[1], tonumber(ARGV[2]) * 2, KEYS[1]}"


class Count:
    def __init__(self) -> None:
        self.n = 0

    def inc(self, amount: float = 1) -> None:
        self.n += int(amount)


@pytest.fixture
def server(tmp_path: Path) -> Any:
    running = embedded.start_valkey(tmp_path / "valkey")
    yield running
    os.kill(running.process.pid, signal.SIGCONT)
    running.stop()


async def test_calls_in_flight_get_their_own_replies_in_order(server: Any) -> None:
    counted = Count()
    lean = LeanRedis(server.address, 1.0, counted)
    try:
        script = redis_client(server.address).register_script(ECHO)
        assert await lean.evalsha(script, ["k"], ["x", 0]) == [b"x", 0, b"k"]
        assert counted.n == 3  # NOSCRIPT, the script loaded, and run
        replies = await asyncio.gather(
            *(lean.evalsha(script, [f"k{i}"], [f"v{i}", i]) for i in range(500))
        )
        assert replies == [[f"v{i}".encode(), 2 * i, f"k{i}".encode()] for i in range(500)]
        assert counted.n == 503
        # One caller giving up (its reply still comes) leaves the others' replies theirs.
        slow = asyncio.ensure_future(lean.execute("BLPOP", "empty", "0.2"))  # answers in 0.2 s
        await asyncio.sleep(0.05)
        after = asyncio.ensure_future(lean.execute("ECHO", "after"))
        slow.cancel()
        assert await after == b"after"
        assert await lean.execute("SET", "a", "1") == b"OK"
        assert await lean.execute("GET", "a") == b"1"
    finally:
        await lean.aclose()


async def test_an_error_reply_is_raised_and_not_sent_again(server: Any) -> None:
    lean = LeanRedis(server.address)
    try:
        counted = Count()
        lean.round_trips = counted
        await lean.execute("SET", "s", "text")
        with pytest.raises(redis_errors.ResponseError, match="WRONGTYPE"):
            await lean.execute("LPUSH", "s", "x")
        with pytest.raises(redis_errors.NoScriptError):
            await lean.execute("EVALSHA", "0" * 40, 0)
        assert counted.n == 3
        assert await lean.execute("GET", "s") == b"text"  # the connection still serves
        # redis-py's classes, which the services map (a demoted primary: UNAVAILABLE).
        await lean.execute("REPLICAOF", "127.0.0.1", "1")
        with pytest.raises(redis_errors.ReadOnlyError):
            await lean.execute("SET", "s", "other")
        await lean.execute("REPLICAOF", "NO", "ONE")
    finally:
        await lean.aclose()


async def test_a_frozen_node_times_out_and_a_thawed_one_serves_again(server: Any) -> None:
    lean = LeanRedis(server.address, timeout_s=0.3)
    try:
        assert await lean.execute("PING") == b"PONG"
        os.kill(server.process.pid, signal.SIGSTOP)
        calls = [asyncio.ensure_future(lean.execute("INCR", "n")) for _ in range(3)]
        done = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 30)
        assert all(isinstance(r, redis_errors.TimeoutError) for r in done), done
        os.kill(server.process.pid, signal.SIGCONT)
        # The INCRs sent before the freeze may have run (as with redis-py: the scripts that
        # are retried check a seq); what matters is that the client serves again.
        assert await lean.execute("SET", "after", "1") == b"OK"
        assert await lean.execute("GET", "after") == b"1"
    finally:
        await lean.aclose()


async def test_a_restarted_node_is_reached_again_by_the_retries(tmp_path: Path) -> None:
    first = embedded.start_valkey(tmp_path / "v")
    port = int(first.address.rsplit(":", 1)[1].split("/")[0])
    lean = LeanRedis(first.address, 1.0)
    try:
        script = redis_client(first.address).register_script(ECHO)
        assert await lean.evalsha(script, ["k"], ["a", 1]) == [b"a", 2, b"k"]
        first.process.kill()
        first.process.wait()
        restarted = embedded.start_valkey(tmp_path / "v", port)
        try:
            # The old connection is dead; the call is sent again on a new one, where the
            # restarted server lacks the script: loaded and run.
            assert await lean.evalsha(script, ["k"], ["b", 2]) == [b"b", 4, b"k"]
        finally:
            restarted.stop()
        with pytest.raises(redis_errors.ConnectionError):
            await lean.execute("PING")  # gone for good: refused after the retries
    finally:
        await lean.aclose()


async def test_the_urls_password_and_database_are_used(server: Any) -> None:
    admin = LeanRedis(server.address)
    try:
        await admin.execute("CONFIG", "SET", "requirepass", "s3cret")
        base = server.address.rsplit("/", 1)[0].replace("redis://", "")
        wrong = LeanRedis(f"redis://:nope@{base}/0")
        with pytest.raises(redis_errors.AuthenticationError):
            await wrong.execute("PING")
        lean = LeanRedis(f"redis://:s3cret@{base}/3")
        try:
            await lean.execute("SET", "in3", "yes")
            plain = LeanRedis(f"redis://:s3cret@{base}/0")
            assert await plain.execute("GET", "in3") is None
            assert await plain.execute("SELECT", "3") == b"OK"
            assert await plain.execute("GET", "in3") == b"yes"
            await plain.aclose()
        finally:
            await lean.aclose()
    finally:
        await admin.aclose()


def test_only_plain_redis_urls_are_taken() -> None:
    with pytest.raises(ValueError, match="plain redis://"):
        LeanRedis("rediss://127.0.0.1:6380/0")


def test_a_store_on_a_cluster_refuses_the_lean_client() -> None:
    """It pipelines to one node: a cluster's keys live on many."""
    cluster = redis_client("redis://127.0.0.1:7000/0", cluster=True)  # no I/O until a call
    with pytest.raises(ValueError, match="standalone"):
        TableStore(cluster, LeanRedis("redis://127.0.0.1:7000/0"))
