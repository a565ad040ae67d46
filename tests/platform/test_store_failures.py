"""Issue 24, item 10: every "cannot reach, or not yet ready" error of each store's driver
answers UNAVAILABLE (retryable), never UNKNOWN, and a refused statement is not one of them. The
errors are the drivers' own: asyncpg's, raised through SQLAlchemy's real wrapping against a
server speaking PostgreSQL's wire protocol that refuses the startup as PostgreSQL does in crash
recovery, at its connection limit or shutting down; a real PostgreSQL and a real SQLite; and
redis-py's from real Valkey servers out of memory, demoted to a replica, in cluster mode without
slots, or gone; and a frozen Valkey (a node cut off keeps its sockets open): calls to it time
out and a subscription on it is found silent."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as redis_asyncio
from redis import exceptions as redis_errors
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine

from infra.cluster import embedded, valkey_cluster
from services.common.connections import redis_client
from services.common.errors import Unavailable, infrastructure_failure, sqlstate
from services.common.pubsub_pulse import Pulse, PulseLost

pytestmark = pytest.mark.integration
SSL_REQUEST = 80877103


async def _refusing_postgres(code: str, message: str) -> AsyncIterator[int]:
    """A server that answers every startup with PostgreSQL's FATAL ErrorResponse `code`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            length = int.from_bytes(await reader.readexactly(4), "big")
            body = await reader.readexactly(length - 4)
            if int.from_bytes(body[:4], "big") == SSL_REQUEST:
                writer.write(b"N")  # no TLS; the StartupMessage follows
                length = int.from_bytes(await reader.readexactly(4), "big")
                await reader.readexactly(length - 4)
            fields = (
                b"".join(
                    kind + value.encode() + b"\0"
                    for kind, value in (
                        (b"S", "FATAL"),
                        (b"V", "FATAL"),
                        (b"C", code),
                        (b"M", message),
                    )
                )
                + b"\0"
            )
            writer.write(b"E" + (len(fields) + 4).to_bytes(4, "big") + fields)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    ("code", "message", "driver_error"),
    [
        ("57P03", "the database system is not yet accepting connections",
         asyncpg.exceptions.CannotConnectNowError),
        ("53300", "sorry, too many clients already", asyncpg.exceptions.TooManyConnectionsError),
        ("57P01", "terminating connection due to administrator command",
         asyncpg.exceptions.AdminShutdownError),
        ("57P02", "terminating connection because of crash of another server process",
         asyncpg.exceptions.CrashShutdownError),
    ],
    ids=["in-recovery", "too-many-clients", "admin-shutdown", "crash-shutdown"],
)  # fmt: skip
async def test_postgres_not_ready_is_unavailable(
    code: str, message: str, driver_error: type[Exception]
) -> None:
    async for port in _refusing_postgres(code, message):
        engine = create_async_engine(f"postgresql+asyncpg://bg:pw@127.0.0.1:{port}/bg")
        try:
            with pytest.raises(Exception) as raised:
                async with engine.connect() as conn:
                    await conn.execute(text("SELECT 1"))
        finally:
            await engine.dispose()
        exc = raised.value
        # What the issue found: a plain DBAPIError, not invalidated, around asyncpg's own error.
        assert isinstance(exc, DBAPIError) and not exc.connection_invalidated
        assert exc.orig is not None and isinstance(exc.orig.__cause__, driver_error)
        assert sqlstate(exc) == code
        mapped = infrastructure_failure(exc)
        assert isinstance(mapped, Unavailable) and mapped.code == "LEDGER_UNAVAILABLE"


async def test_postgres_gone_is_unavailable_and_a_refused_statement_is_not(
    postgres_url: str, unused_tcp_port: int
) -> None:
    nobody = create_async_engine(f"postgresql+asyncpg://bg:pw@127.0.0.1:{unused_tcp_port}/bg")
    try:
        with pytest.raises(Exception) as refused:
            async with nobody.connect():
                pass
    finally:
        await nobody.dispose()
    assert isinstance(infrastructure_failure(refused.value), Unavailable)
    real = create_async_engine(postgres_url)
    try:
        with pytest.raises(DBAPIError) as bad:
            async with real.connect() as conn:
                await conn.execute(text("SELEC 1"))  # a syntax error: the statement's fault
    finally:
        await real.dispose()
    assert sqlstate(bad.value) == "42601"
    assert infrastructure_failure(bad.value) is None


async def test_sqlite_that_cannot_open_its_file_is_unavailable(tmp_path: Path) -> None:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/missing/dir/db.sqlite")
    try:
        with pytest.raises(DBAPIError) as raised:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
    finally:
        await engine.dispose()
        await _sqlite_threads_done()
    mapped = infrastructure_failure(raised.value)
    assert isinstance(mapped, Unavailable) and mapped.code == "LEDGER_UNAVAILABLE"


async def _sqlite_threads_done() -> None:
    """Let aiosqlite's worker threads finish while this test's loop runs: one still answering
    the failed connection after the loop closed raised in its thread, a warning pinned on
    whichever test ran next. Bounded (2 s); another test's live connection is not waited for
    longer."""
    for _ in range(200):
        if not any("_connection_worker_thread" in t.name for t in threading.enumerate()):
            return
        await asyncio.sleep(0.01)


async def _valkey_error(client: Any, *command: object) -> Exception:
    with pytest.raises(redis_errors.RedisError) as raised:
        await client.execute_command(*command)
    return raised.value


async def test_valkey_full_demoted_or_gone_is_unavailable(tmp_path: Path) -> None:
    server = embedded.start_valkey(tmp_path / "valkey")
    client: Any = redis_asyncio.Redis.from_url(server.address)
    try:
        await client.config_set("maxmemory", "1mb")
        full = None
        for i in range(2000):  # noeviction: past maxmemory a write fails loudly
            try:
                await client.set(f"k{i}", "x" * 10_000)
            except redis_errors.RedisError as exc:
                full = exc
                break
        assert isinstance(full, redis_errors.OutOfMemoryError)  # its message lost "OOM"
        mapped = infrastructure_failure(full)
        assert isinstance(mapped, Unavailable) and mapped.code == "STORE_FULL"
        await client.config_set("maxmemory", "0")
        await client.execute_command("REPLICAOF", "127.0.0.1", "1")  # a failover demoted it
        readonly = await _valkey_error(client, "SET", "k", "v")
        assert isinstance(readonly, redis_errors.ReadOnlyError)
        assert isinstance(infrastructure_failure(readonly), Unavailable)
    finally:
        await client.aclose()
        server.stop()
    gone = redis_asyncio.Redis.from_url(server.address, socket_connect_timeout=1)
    try:
        refused = await _valkey_error(gone, "GET", "k")
        assert isinstance(infrastructure_failure(refused), Unavailable)
    finally:
        await gone.aclose()


async def test_a_valkey_cluster_node_serving_no_slot_is_unavailable(tmp_path: Path) -> None:
    port, bus = embedded.free_port(), embedded.free_port()
    argv = valkey_cluster.cluster_node_argv(port, bus, tmp_path)
    node = await asyncio.create_subprocess_exec(
        *argv, cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        await embedded.wait_redis(url)
        client = redis_asyncio.Redis.from_url(url)
        try:
            down = await _valkey_error(client, "GET", "k")  # no primary serves its slot
        finally:
            await client.aclose()
        assert isinstance(down, redis_errors.ClusterDownError)
        assert isinstance(infrastructure_failure(down), Unavailable)
    finally:
        node.terminate()
        await node.wait()


async def test_a_frozen_valkey_times_calls_out_and_its_quiet_subscription_is_caught(
    tmp_path: Path,
) -> None:
    # A frozen (or cut-off) node keeps its sockets open: a call must time out (so a cluster
    # client reads the slots again and finds the replica that took over), and a subscription on
    # it must be found silent by its pulse rather than wait for messages that never come.
    server = embedded.start_valkey(tmp_path / "valkey")
    client: Any = redis_client(server.address, timeout=0.3)
    pubsub = client.pubsub()
    pulse = Pulse(every_s=0.05, timeout_s=0.3)
    assert server.process is not None
    try:
        await pubsub.subscribe("quiet")
        pongs = 0
        for _ in range(20):  # alive: every ping is answered, nothing is raised
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.05)
            if message is not None:
                pulse.heard()
                pongs += message["type"] == "pong"
            await pulse.beat(pubsub)
        assert pongs >= 1
        assert await client.ping()  # a connection in the pool, as a running service has
        os.kill(server.process.pid, signal.SIGSTOP)
        with pytest.raises(redis_errors.TimeoutError):
            await asyncio.wait_for(client.get("k"), 30)  # retried 3 times, then given up
        lost = None
        for _ in range(200):
            try:
                if await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.05):
                    pulse.heard()
                await pulse.beat(pubsub)
            except PulseLost as exc:
                lost = exc
                break
        assert isinstance(lost, PulseLost)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
        with contextlib.suppress(Exception):
            await pubsub.aclose()
        await client.aclose()
        server.stop()
