"""Small helpers shared by integration tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.common.connections import redis_client


async def scrape_metrics(port: int, host: str = "127.0.0.1") -> str:
    """The Prometheus text a service exports on `port` (fetched off the event loop)."""

    def fetch() -> str:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as reply:
            return str(reply.read().decode())

    return await asyncio.to_thread(fetch)


async def retried(make: Any, until: float) -> Any:
    """`make()` retried while the cluster heals (a gRPC error, a timeout, a refused connection)
    until `until` (time.monotonic()); then the last error."""
    import grpc

    while True:
        try:
            return await make()
        except (grpc.aio.AioRpcError, TimeoutError, ConnectionError):
            if time.monotonic() > until:
                raise
            await asyncio.sleep(0.3)


async def awaited(make: Any, ok: Any, until: float) -> Any:
    """`make()` (retried as `retried` does) until `ok(result)`, or until `until`: then the last
    result, for the caller's assertion to show."""
    while True:
        found = await retried(make, until)
        if ok(found) or time.monotonic() > until:
            return found
        await asyncio.sleep(0.2)


def kind(event: Any) -> str:
    """A TableEvent's type: the name of its `body` oneof field ("dice_rolled", ...)."""
    return str(event.WhichOneof("body"))


@dataclass(frozen=True)
class Valkey:
    """A single Valkey or a Valkey Cluster, as the tests reach it."""

    url: str
    cluster: bool

    def client(self) -> Any:
        return redis_client(self.url, cluster=self.cluster)

    @property
    def env(self) -> dict[str, str]:
        """What a spawned service needs to reach it."""
        return {"BG_REDIS_URL": self.url, "BG_REDIS_CLUSTER": "true" if self.cluster else "false"}


async def flushed_client(request: Any, kind: str) -> Any:
    """A client of the session's single Valkey ("valkey") or Valkey Cluster ("valkey-cluster"),
    flushed: for fixtures that run a store on memory and on both (close it after)."""
    if kind == "valkey":
        valkey = Valkey(request.getfixturevalue("valkey_url"), cluster=False)
    else:
        valkey = Valkey(request.getfixturevalue("valkey_cluster").url, cluster=True)
    client = valkey.client()
    await client.flushdb()
    return client


def kafka_namespace() -> str:
    """A namespace of its own for a cluster on the session's shared broker: its topics and
    consumer groups are nobody else's (a member another test killed -9 never holds them)."""
    return "t" + uuid.uuid4().hex[:12]


@contextlib.contextmanager
def running_cluster(data: Path, env: dict[str, str], *args: str) -> Iterator[dict[str, Any]]:
    """`bgcluster up --base-port 0 --data-dir <data> <args>` as a real process; yields its state
    file (cluster.json) once every service serves, and stops it (SIGTERM) afterwards. With an
    external Kafka (--kafka-bootstrap) the cluster gets a Kafka namespace of its own."""
    if "--kafka-bootstrap" in args:
        args = (*args, "--kafka-namespace", kafka_namespace())
    log = (data / "up.log").open("w")
    proc = subprocess.Popen(
        [Path(sys.executable).parent / "bgcluster", "up", "--base-port", "0",
         "--data-dir", str(data), *args],
        env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    state_file = data / "cluster.json"
    try:
        for _ in range(600):
            if state_file.exists() and "all services SERVING" in (data / "up.log").read_text():
                break
            assert proc.poll() is None, (data / "up.log").read_text()
            time.sleep(0.1)
        yield json.loads(state_file.read_text())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        log.close()


async def sql_url(request: Any, folder: Path, stem: str) -> str:
    """A fresh database for a test parametrized on "sqlite" / "postgres": a file in `folder`, or
    a new database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{folder}/{stem}.db"
    import asyncpg

    base: str = request.getfixturevalue("postgres_url")
    name = f"{stem}_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(base.replace("+asyncpg", ""))
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    return base.rsplit("/", 1)[0] + f"/{name}"


def error_of(exc: Any) -> Any:
    """The typed error (bg.common.v1.Error) a failed call carries; failing when it has none."""
    from services.common.errors import error_from

    detail = error_from(exc)
    assert detail is not None, f"no typed error in {exc!r}"
    return detail


async def load_table(store: Any, table_id: str) -> Any:
    """A table as its store has it now; failing when there is none."""
    found = await store.load(table_id)
    assert found is not None, f"no table {table_id}"
    return found


async def stored_events(store: Any, table_id: str) -> list[Any]:
    """A table's events as its Redis stream holds them, decoded."""
    from bg.events.v1 import events_pb2

    events = []
    for _, data in await store.events(table_id, 0, 100_000):
        ev = events_pb2.TableEvent()
        ev.ParseFromString(data)
        events.append(ev)
    return events


def assert_no_turn_timed_out_twice(table_id: str, events: list[Any]) -> None:
    """Between two turn starts at most one timeout (of any clock): none doubled."""
    per_turn = 0
    for ev in events:
        if kind(ev) == "turn_started":
            per_turn = 0
        elif kind(ev) == "timed_out":
            per_turn += 1
            assert per_turn == 1, f"{table_id}: a turn timed out twice"
