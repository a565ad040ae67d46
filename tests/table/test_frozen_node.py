"""Issue 43: a frozen Valkey Cluster primary holds only what it serves. Its pipelines' parts fail
alone (the other nodes' replies stand, where redis-py's cluster pipeline raised for all), and a
table replica's clock worker keeps firing the deadlines of the other nodes' shards while one is
frozen (a pass per node), then the frozen node's once it answers, each turn timed out once
(I-7's turn timeout, fired once). Real Valkey Cluster processes, frozen with SIGSTOP."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis_asyncio
from redis.crc import key_slot

from infra.cluster.valkey_cluster import RunningCluster, primary_of, start_valkey_cluster
from services.common.connections import redis_client
from services.common.node_pipelines import NODE_FAILURES, run_by_node
from services.contracts.redis_keys import table_key
from services.table.adapters.redis_store import TableStore
from services.table.clock import ClockWorker
from services.table.table_core import TableCore
from tests.helpers import assert_no_turn_timed_out_twice, stored_events
from tests.table.driver import options
from tests.table.fakes import FakeWallet

pytestmark = pytest.mark.integration
P = ["alice", "bob"]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RunningCluster]:
    """Three primaries and no replica: a frozen primary's slots stay its own."""
    running = start_valkey_cluster(tmp_path / "cluster", primaries=3, replicas=0)
    try:
        yield running
    finally:
        for node in running.nodes:  # a stopped process would not see its SIGTERM
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.process.pid, signal.SIGCONT)
        running.stop()


async def _serving(cluster: RunningCluster, key: str) -> int:
    """The index in `cluster.nodes` of the primary that serves `key`."""
    port = await primary_of(cluster.url, key_slot(key.encode()))
    return cluster.ports.index(port)


@contextlib.contextmanager
def _frozen(cluster: RunningCluster, node: int) -> Iterator[None]:
    pid = cluster.nodes[node].process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


async def test_a_frozen_node_fails_only_its_own_part_of_a_pipeline(
    cluster: RunningCluster,
) -> None:
    client: Any = redis_client(cluster.url, cluster=True, timeout=0.3)
    try:
        keys = [f"k{i}" for i in range(30)]
        for key in keys:
            await client.set(key, key)
        nodes = [await _serving(cluster, key) for key in keys]
        assert len(set(nodes)) == 3
        with _frozen(cluster, nodes[0]):
            with pytest.raises(NODE_FAILURES):  # redis-py's own pipeline: all or nothing
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.get(key)
                await pipe.execute()
            replies = await run_by_node(client, [("GET", key) for key in keys])
        for key, node, reply in zip(keys, nodes, replies, strict=True):
            if node == nodes[0]:
                assert isinstance(reply, NODE_FAILURES)
            else:
                assert reply == key.encode()
        # Thawed, the same call answers every key (the client reconnects by itself).
        assert await run_by_node(client, [("GET", key) for key in keys]) == [
            key.encode() for key in keys
        ]
    finally:
        await client.aclose()


async def _finished(core: TableCore, tables: list[str]) -> set[str]:
    done = set()
    for table in tables:
        loaded = await core.store.load(table)
        if loaded is not None and loaded.state.match.finished:
            done.add(table)
    return done


async def _until_finished(core: TableCore, tables: list[str], rounds: int = 1500) -> set[str]:
    done: set[str] = set()
    for _ in range(rounds):
        done = await _finished(core, tables)
        if done == set(tables):
            break
        await asyncio.sleep(0.05)
    return done


async def test_the_clock_fires_the_other_nodes_deadlines_while_one_is_frozen(
    cluster: RunningCluster,
) -> None:
    dealer_client: Any = redis_client(cluster.url, cluster=True, timeout=0.3)
    clock_client: Any = redis_client(cluster.url, cluster=True, timeout=0.3)
    dealer = TableCore(TableStore(dealer_client), FakeWallet(), clock_scale=0.001)
    clock_core = TableCore(TableStore(clock_client), FakeWallet(), clock_scale=0.001)
    stop = asyncio.Event()
    worker: asyncio.Task[None] | None = None
    try:
        tables = [f"t{i}" for i in range(12)]
        nodes = {t: await _serving(cluster, table_key(t)) for t in tables}
        frozen = nodes[tables[0]]
        theirs = [t for t in tables if nodes[t] == frozen]
        others = [t for t in tables if nodes[t] != frozen]
        assert theirs and others
        for t in tables:
            await dealer.create_match(t, f"m-{t}", P, options("wagered", match_length=1, bet=100))
        worker = asyncio.create_task(ClockWorker(TableStore(clock_client), clock_core).run(stop))
        with _frozen(cluster, frozen):
            # Every turn times out (nobody plays): the other nodes' matches end by the clock.
            assert await _until_finished(dealer, others) == set(others)
        assert await _until_finished(dealer, theirs) == set(theirs)
    finally:
        stop.set()
        if worker is not None:
            await worker
    for t in tables:
        assert_no_turn_timed_out_twice(t, await stored_events(dealer.store, t))
    await dealer_client.aclose()
    await clock_client.aclose()


async def _blocked_ids(admin: Any) -> set[int]:
    listed = await admin.execute_command("CLIENT", "LIST", "TYPE", "normal")
    text = listed.decode() if isinstance(listed, bytes) else str(listed)
    return {int(f.split("=")[1]) for line in text.splitlines() if "cmd=blpop" in line
            for f in line.split() if f.startswith("id=")}  # fmt: skip


async def test_a_failed_node_does_not_close_the_calls_in_flight_on_the_others(
    cluster: RunningCluster,
) -> None:
    # redis-py's cluster client closes every connection of the client when a node fails a
    # call; a call waiting on a healthy node lost its connection (and, when the close caught it
    # connecting, failed with RuntimeError: UNKNOWN to its caller). Ours keeps it.
    client: Any = redis_client(cluster.url, cluster=True, timeout=2.0)
    keys = [f"k{i}" for i in range(30)]
    nodes = [await _serving(cluster, key) for key in keys]
    dead, healthy = nodes[0], next(n for n in nodes if n != nodes[0])
    waiting_on = keys[nodes.index(healthy)]
    admin = redis_asyncio.Redis(port=cluster.ports[healthy])
    try:
        await client.set(keys[0], "x")  # the client knows the slots and has connections
        waiter = asyncio.create_task(client.blpop([waiting_on], timeout=10))
        before: set[int] = set()
        for _ in range(100):
            before = await _blocked_ids(admin)
            if before:
                break
            await asyncio.sleep(0.02)
        assert len(before) == 1
        cluster.nodes[dead].process.kill()
        cluster.nodes[dead].process.wait()
        with pytest.raises(NODE_FAILURES):  # redis-py's pipeline: retried, then given up
            pipe = client.pipeline(transaction=False)
            for key in keys:
                pipe.get(key)
            await pipe.execute()
        assert await _blocked_ids(admin) == before  # the same connection, still waiting
        await admin.rpush(waiting_on, "done")
        assert await asyncio.wait_for(waiter, 10) == (waiting_on.encode(), b"done")
    finally:
        await admin.aclose()
        await client.aclose()


async def test_closing_the_client_after_a_failure_closes_its_connections(
    cluster: RunningCluster,
) -> None:
    # A failed call leaves the client to read its slots again; closing it then must still close
    # every connection (redis-py closes only a client it believes initialized: it left them).
    client: Any = redis_client(cluster.url, cluster=True, timeout=0.3)
    keys = [f"k{i}" for i in range(30)]
    for key in keys:
        await client.set(key, key)
    frozen = await _serving(cluster, keys[0])
    with _frozen(cluster, frozen), pytest.raises(NODE_FAILURES):
        await client.get(keys[0])  # redis-py marks the client to read its slots again
    healthy = next(
        n for n in client.get_nodes() if not n.name.endswith(f":{cluster.ports[frozen]}")
    )
    assert any(c.is_connected for c in healthy._connections)
    await client.aclose()
    assert not any(c.is_connected for n in client.get_nodes() for c in n._connections)
