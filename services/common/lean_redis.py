"""A lean Redis client for the table store's scripts: the commit on every command's path,
the relay's on every pass.

redis-py spends ~0.1 ms of Python on each call around the round trip itself (a pooled
connection taken under a lock and a timeout, a readiness probe of its socket, observability
hooks, a timeout on each read): per command, more than the rules. This client keeps one
connection, pipelines every call on it (Redis answers in order, so replies are matched to
callers first in, first out) and watches the oldest call in flight with one timer instead of
a timeout per call. Measured against redis-py's client side by side (`benchmarks/
bench_lean_redis.py`).

It behaves as `services.common.connections.redis_client` does where the table store relies on it:
redis-py's exceptions (its parser's classes for error replies: NoScriptError, ReadOnlyError...),
a reply waiting at most `timeout_s` (then the connection is dropped, as a frozen node keeps its
socket open), a call meeting a dead connection or a timeout sent again on a new one up to 3
times with the same backoff (as redis-py sends every call again: each script checks the
table's `seq`, a command id or a lease token, or only reads), round trips counted. Plain
`redis://` only; anything else (TLS, a cluster) stays on redis-py.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import hiredis
from redis._parsers.base import BaseParser
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

RETRIES = 3  # as redis_client's Retry: a call is sent at most four times


class _Counted(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class _Script(Protocol):
    sha: str
    script: Any


def _error(reply: hiredis.ReplyError) -> Exception:
    """An error reply as redis-py raises it (LOADING is a ConnectionError, so retried)."""
    error: Exception = BaseParser.parse_error(str(reply))  # type: ignore[no-untyped-call]
    return error


class _Connection(asyncio.Protocol):
    """One socket; the calls in flight wait on futures, in the order they were sent."""

    def __init__(self, timeout_s: float | None) -> None:
        self.reader = hiredis.Reader()
        self.waiting: collections.deque[tuple[asyncio.Future[Any], float]] = collections.deque()
        self.transport: asyncio.Transport | None = None
        self.timeout_s = timeout_s
        self.lost = False
        self._watch: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def send(self, packed: bytes) -> asyncio.Future[Any]:
        if self.lost:
            raise RedisConnectionError("connection to Redis lost")
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[Any] = loop.create_future()
        self.waiting.append((reply, time.monotonic()))
        assert self.transport is not None
        self.transport.write(packed)
        if self._watch is None and self.timeout_s is not None:
            self._watch = loop.call_later(self.timeout_s, self._check)
        return reply

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        try:
            while (reply := self.reader.gets()) is not False:
                if not self.waiting:  # a reply nobody asked for: the stream is not ours
                    self.close(RedisConnectionError("Redis sent a reply no call waits for"))
                    return
                future, _ = self.waiting.popleft()
                if not future.done():  # a caller that gave up still had its reply read
                    future.set_result(reply)
        except hiredis.ProtocolError as exc:
            self.close(RedisConnectionError(f"Redis protocol error: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(RedisConnectionError(f"connection to Redis lost: {exc!r}"))

    def _check(self) -> None:
        """The oldest call past its time: the node is frozen or cut off. Every call on the
        connection fails (their replies could only come late, out of their callers' hands)."""
        self._watch = None
        if not self.waiting or self.timeout_s is None:
            return
        age = time.monotonic() - self.waiting[0][1]
        if age >= self.timeout_s:
            self.close(RedisTimeoutError(f"no reply from Redis in {self.timeout_s} s"))
        else:
            loop = asyncio.get_running_loop()
            self._watch = loop.call_later(self.timeout_s - age, self._check)

    def close(self, error: Exception) -> None:
        self._fail(error)
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, error: Exception) -> None:
        self.lost = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        while self.waiting:
            future, _ = self.waiting.popleft()
            if not future.done():
                future.set_exception(error)


class LeanRedis:
    """Calls on one pipelined connection to a standalone Redis, made on first use and again
    after it is lost."""

    def __init__(
        self, url: str, timeout_s: float | None = 1.0, round_trips: _Counted | None = None
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme != "redis":
            raise ValueError(f"LeanRedis speaks plain redis:// only, not {parts.scheme}://")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 6379
        self.hello: list[tuple[Any, ...]] = []  # sent first on each new connection
        if parts.password is not None:
            user = unquote(parts.username) if parts.username else None
            password = unquote(parts.password)
            self.hello.append(("AUTH", user, password) if user else ("AUTH", password))
        db = parts.path.lstrip("/")
        if db and db != "0":
            self.hello.append(("SELECT", db))
        self.timeout_s = timeout_s
        self.round_trips = round_trips
        self._backoff = ExponentialBackoff(cap=1.0, base=0.1)
        self._connection: _Connection | None = None
        self._connecting: asyncio.Lock | None = None

    async def execute(self, *args: Any) -> Any:
        """One command's reply; an error reply raises (NoScriptError for NOSCRIPT)."""
        packed = hiredis.pack_command(args)
        for failures in range(RETRIES + 1):
            try:
                connection = await self._connected()
                if self.round_trips is not None:
                    self.round_trips.inc()
                reply = await connection.send(packed)
                if isinstance(reply, hiredis.ReplyError):
                    raise _error(reply)
                return reply
            except (RedisConnectionError, RedisTimeoutError):
                if failures == RETRIES:
                    raise
                await asyncio.sleep(self._backoff.compute(failures + 1))
        raise AssertionError("unreachable")

    async def evalsha(self, script: _Script, keys: list[str], args: list[Any]) -> Any:
        """A registered script (redis-py's `register_script`) by its SHA, loaded when Redis
        lacks it (a restart)."""
        try:
            return await self.execute("EVALSHA", script.sha, len(keys), *keys, *args)
        except NoScriptError:
            await self.execute("SCRIPT", "LOAD", script.script)
            return await self.execute("EVALSHA", script.sha, len(keys), *keys, *args)

    async def _connected(self) -> _Connection:
        found = self._connection
        if found is not None and not found.lost:
            return found
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:  # one connection made for all who found none
            found = self._connection
            if found is None or found.lost:
                found = self._connection = await self._connect()
        return found

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        limit = self.timeout_s or 2.0
        try:
            async with asyncio.timeout(limit):
                _, connection = await loop.create_connection(
                    lambda: _Connection(self.timeout_s), self.host, self.port
                )
                for command in self.hello:
                    reply = await connection.send(hiredis.pack_command(command))
                    if isinstance(reply, hiredis.ReplyError):
                        connection.close(RedisConnectionError(str(reply)))
                        raise _error(reply)
        except TimeoutError as exc:
            raise RedisTimeoutError(f"no connection to Redis in {limit} s") from exc
        except OSError as exc:
            raise RedisConnectionError(f"cannot connect to Redis: {exc}") from exc
        return connection

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close(RedisConnectionError("client closed"))
