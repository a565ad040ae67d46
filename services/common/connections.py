"""Connections to Redis and SQL, and the readiness checks that probe them.

Kafka is deliberately not a readiness dependency: events leave through outboxes (the table's
Redis stream, the wallet's outbox table), so a broker outage delays events but must not take
player-facing services out of the load balancer.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager, nullcontext
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol

import redis.asyncio as redis_asyncio
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.common.service import ReadinessCheck

PUBSUB_HEADROOM = 8  # a cluster node's connections kept for pub/sub beyond the calls in flight


class _Counted(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class CountingPipeline(Pipeline):
    """A pipeline that counts itself as one round trip when it runs."""

    counter: _Counted | None = None

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        if self.counter is not None and self.command_stack:
            self.counter.inc()
        return await super().execute(raise_on_error)


class CountingRedis(redis_asyncio.Redis):
    """A client that counts its round trips (`bg_redis_round_trips_total`): what the command
    path costs in Redis, measured where the latency is paid."""

    counter: _Counted | None = None

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        if self.counter is not None:
            self.counter.inc()
        return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        pipe = CountingPipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint
        )
        pipe.counter = self.counter
        return pipe


# Set while one of the client's own calls runs: redis-py's cluster client, when a node fails a
# call (a timeout, a slot not covered mid-failover, a pipeline's part), closes every connection
# of the client, those other calls in flight are using included; they then fail with uvloop's
# RuntimeError or an AttributeError on a closed transport (UNKNOWN to their callers, on nodes
# that were healthy). Inside a call, `aclose` only has the slots read again.
_IN_CALL: ContextVar[bool] = ContextVar("bg_redis_in_call", default=False)


class CountingClusterPipeline(ClusterPipeline):
    counter: _Counted | None = None
    slots: AbstractAsyncContextManager[Any] = nullcontext()

    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True) -> Any:
        if self.counter is not None and len(self):
            self.counter.inc()
        token = _IN_CALL.set(True)
        try:
            async with self.slots:
                return await super().execute(raise_on_error, allow_redirections)
        finally:
            _IN_CALL.reset(token)


class CountingRedisCluster(RedisCluster):
    """CountingRedis for a Valkey Cluster: a pipeline counts once (it is one round trip to
    each node it touches, in parallel).

    redis-py's cluster client fails a command at once (MaxConnectionsError) when a node's pool
    is exhausted, where the plain client waits for a connection: a burst (thousands of Play
    streams opening) then turns into errors. So calls in flight are bounded here, below the
    pool size, and a burst queues instead."""

    counter: _Counted | None = None
    slots: AbstractAsyncContextManager[Any] = nullcontext()  # redis_client bounds it

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if self.counter is not None:
            self.counter.inc()
        token = _IN_CALL.set(True)
        try:
            async with self.slots:
                return await super().execute_command(*args, **kwargs)
        finally:
            _IN_CALL.reset(token)

    async def aclose(self) -> None:
        if _IN_CALL.get():  # redis-py's failure handling, not the owner closing the client
            self._initialize = True  # the next call reads the slots again
            return
        # The owner closing it: redis-py closes only a client it believes initialized, which
        # the line above may have left believing otherwise.
        self._initialize = False
        await super().aclose()

    def pipeline(
        self, transaction: Any | None = None, shard_hint: Any | None = None
    ) -> ClusterPipeline:
        pipe = CountingClusterPipeline(self, transaction)  # type: ignore[abstract]  # as redis-py
        pipe.counter = self.counter
        pipe.slots = self.slots
        return pipe


def reply_text(raw: Any) -> str:
    """A Redis reply as text: bytes from a client that does not decode responses, str from
    one that does (the stores run on both)."""
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def redis_client(
    url: str,
    max_connections: int = 200,
    round_trips: _Counted | None = None,
    cluster: bool = False,
    timeout: float | None = 1.0,
) -> Any:
    """A pooled client; connects lazily, so building it does no I/O. At `max_connections`
    a caller waits (up to 5 s) for a free connection instead of failing at once. Replies are
    parsed by hiredis when it is installed (redis-py picks it up by itself).
    A command that meets a dead connection (Valkey restarted) is sent again on a new one, up to
    3 times: safe, because every write the services make is a script that checks the table's
    `seq` or a command id, or is idempotent (stream acks, set adds).
    With `cluster`, `url` names any node of a Valkey Cluster: the client learns the slots and
    follows MOVED/ASK redirections and failovers by itself (same retries).
    A reply waits at most `timeout` seconds: a frozen or cut-off node keeps its sockets open, so
    without it a call waits forever, even after the node's replica took over its slots (a
    timeout makes the cluster client read the slots again); a new connection's handshake as well
    (the kernel accepts it for the frozen process). Pub/sub reads pass their own."""
    retry = Retry(ExponentialBackoff(cap=1.0, base=0.1), 3)
    if cluster:
        node = make_url_parts(url)
        counted = CountingRedisCluster(
            host=node[0],
            port=node[1],
            max_connections=max_connections,
            require_full_coverage=False,  # a primary failing over: the other slots still serve
            socket_connect_timeout=timeout or 2.0,
            socket_timeout=timeout,
            health_check_interval=10,
            retry=retry,
            retry_on_error=[RedisConnectionError, RedisTimeoutError],
        )
        counted.counter = round_trips
        # Each call holds at most one connection per node; pub/sub connections come on top.
        counted.slots = asyncio.Semaphore(max(1, max_connections - PUBSUB_HEADROOM))
        return counted
    pool = redis_asyncio.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=5,
        socket_connect_timeout=timeout or 2.0,
        socket_timeout=timeout,
        health_check_interval=10,
        retry=retry,
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
    )
    client = CountingRedis(connection_pool=pool)
    client.counter = round_trips
    return client


def make_url_parts(url: str) -> tuple[str, int]:
    """(host, port) of a redis:// URL."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 6379


def redis_check(client: Any) -> ReadinessCheck:
    async def probe() -> object:
        return await client.ping()

    return ReadinessCheck("redis", probe)


def sql_engine(url: str) -> AsyncEngine:
    """An async engine; for SQLite files the parent folder is created first."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return create_async_engine(url, pool_pre_ping=True)


def sql_check(engine: AsyncEngine) -> ReadinessCheck:
    async def probe() -> object:
        async with engine.connect() as conn:
            return (await conn.execute(text("SELECT 1"))).scalar_one()

    return ReadinessCheck("sql", probe)


async def evalsha(client: Any, script: Any, keys: list[str], args: list[Any]) -> Any:
    """Run a registered script: EVALSHA straight away (the hot path), loading the script only
    when Redis lacks it (a restart). Not redis-py's `script(...)`: that first asks
    isinstance(client, Pipeline), a runtime Protocol check that cost a gateway a tenth of its
    CPU on a cluster client."""
    try:
        return await client.evalsha(script.sha, len(keys), *keys, *args)
    except NoScriptError:
        await client.script_load(script.script)
        return await client.evalsha(script.sha, len(keys), *keys, *args)


async def evalsha_many(
    client: Any, script: Any, calls: list[tuple[list[str], list[Any]]]
) -> list[Any]:
    """One registered script many times: pipelined in one round trip (EVALSHA; redis-py's
    pipelined scripts would first ask SCRIPT EXISTS every time), or, on a cluster (whose
    pipelines refuse scripts), sent concurrently, each to its key's node. Loads the script when
    Redis lost it (a restart)."""
    if isinstance(client, RedisCluster):
        return list(await asyncio.gather(*(evalsha(client, script, k, a) for k, a in calls)))
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for keys, args in calls:
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        try:
            return list(await pipe.execute())
        except NoScriptError:
            if attempt:
                raise
            await client.script_load(script.script)
    raise AssertionError("unreachable")
