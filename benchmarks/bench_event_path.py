"""The event path over time: the broker's CPU per event and a consumer's latency with an empty
log and after a million events, through the cluster's own relay and outbox.

A local cluster (`bgcluster up`, the embedded log: Tansu on memory, generations every 10 s) is
fed table commits straight into its Redis store as a table replica makes them (five events a
commit, on 2,000 tables; the cluster's relays publish them, its wallet and leaderboard consume
them) and wallet operations through the wallet's API (its outbox publishes them). Measured at a
steady 1,000 events/s in three windows of 20 s, once on the empty log and once after 1,000,000
more events: Tansu's CPU per event (the median window's, beside the range: at ~0.05 ms an event
its idle polling, 2-3% of a core, is half of it, so one window is noisy), a benchmark
consumer's latency from commit to read (p50/p99), Tansu's memory and the generations it holds;
the consumer's p99 split into commit -> the relay's produce (the record's CreateTime) and
produce -> read, and where in their generation the slowest 2% of reads were produced (by
second). Beside them, the same steady run on the S3 store
(`--kafka-storage s3`, empty log): SeaweedFS + Tansu per event. (The feeder commits outside
the table replicas, so their relays find its tables by sweeping, here every 0.1 s: the latency
includes up to that.)
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from bg.events.v1 import events_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from engine import profiles
from engine.machine import new_match
from infra.cluster.local_cluster import RunningCluster, cpu_seconds, local_cluster
from services.common import kafka_log
from services.common.clock import now_ms
from services.common.connections import redis_client
from services.common.embedded_generations import EventLog, GenerationConsumer, Incarnation
from services.common.topics import Namespace
from services.contracts.event_records import table_events
from services.contracts.topics import TABLE_EVENTS
from services.table.adapters.redis_store import TableStore
from services.table.ports import Commit, TableMeta

TABLES = 2_000
PER_COMMIT = 5
STEADY_RATE = 1_000  # events/s while measuring
STEADY_S = 20.0
WINDOWS = 3  # steady windows in each state: CPU per event is their median
AGING_EVENTS = 1_000_000
ROTATE_S = 10
STATE = new_match(profiles.casual(1), b"\x02" * 16, 0).state


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Feeder:
    """Commits as a table replica makes them (its relays publish them)."""

    def __init__(self, cluster: RunningCluster) -> None:
        self.redis = redis_client(cluster.state["redis_url"])
        self.store = TableStore(self.redis)
        self.seqs: dict[str, int] = {}
        self.run = os.urandom(3).hex()

    async def commit(self, table_no: int) -> None:
        table_id = f"b{self.run}x{table_no}"
        seq = self.seqs.get(table_id, 0)
        events = []
        at = now_ms()
        for i in range(PER_COMMIT):
            ev = events_pb2.TableEvent(
                event_id=f"{table_id}:{seq + i + 1}",
                table_id=table_id,
                seq=seq + i + 1,
                match_id=f"{table_id}-1",
                at_ms=at,
            )
            ev.turn_started.seat = i % 2
            events.append(ev.SerializeToString())
        meta = TableMeta(table_id=table_id, match_id=f"{table_id}-1", player_ids=["a", "b"])
        result = await self.store.commit(
            Commit(
                table_id,
                None if seq == 0 else seq,
                STATE,
                None,
                "",
                events,
                at,
                meta=meta if seq == 0 else None,
                kinds=["turn_started"] * PER_COMMIT,
            )
        )
        self.seqs[table_id] = result.seq

    async def feed(self, events: int, rate: float | None) -> None:
        """`events` events, at `rate` events/s (None: as fast as the store takes them, eight
        commits in flight)."""
        commits = events // PER_COMMIT
        started = time.monotonic()
        if rate is None:
            sem = asyncio.Semaphore(8)

            async def one(n: int) -> None:
                async with sem:
                    await self.commit(n % TABLES)

            await asyncio.gather(*(one(n) for n in range(commits)))
            return
        for n in range(commits):
            due = started + n * PER_COMMIT / rate
            if (wait := due - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            await self.commit(random.randrange(TABLES))

    async def close(self) -> None:
        await self.redis.aclose()


class Watcher:
    """A consumer of the cluster's table events outside its groups: latency from commit."""

    def __init__(self, cluster: RunningCluster) -> None:
        boot = cluster.state["kafka_bootstrap"]
        self.log = EventLog(Namespace(cluster.state["kafka_namespace"]), "embedded", ROTATE_S, 1)
        self.incarnation = Incarnation(boot, self.log)
        inner = kafka_log.consumer(boot, f"bench-{os.urandom(3).hex()}", client_id="bench")
        self.consumer = GenerationConsumer(inner, self.log, [TABLE_EVENTS], self.incarnation)
        self.latency: list[float] = []
        # The two halves of each event's latency: commit -> the relay's produce (the record's
        # CreateTime), and produce -> this read (the broker and the fetch).
        self.to_kafka: list[float] = []
        self.from_kafka: list[float] = []
        self.into_gen: list[float] = []  # seconds into its generation when it was produced
        self.recording = False
        self.stop = asyncio.Event()

    async def run(self) -> None:
        await self.consumer.start()
        try:
            while not self.stop.is_set():
                try:
                    batch = await self.consumer.getmany(timeout_ms=200)
                except Exception:
                    await asyncio.sleep(0.2)
                    continue
                now = now_ms()
                for records in batch.values():
                    for record in records:
                        if self.recording:
                            for ev in table_events(record.value, record.headers):
                                self.latency.append((now - ev.at_ms) / 1000)
                                self.to_kafka.append((record.timestamp - ev.at_ms) / 1000)
                                self.from_kafka.append((now - record.timestamp) / 1000)
                                rotate_ms = int(self.log.rotate_s * 1000)
                                self.into_gen.append(record.timestamp % rotate_ms / 1000)
                await self.consumer.commit()
        finally:
            await self.consumer.stop()
            await self.incarnation.close()


async def _wallet_ops(cluster: RunningCluster, count: int) -> None:
    """Operations through the wallet's API: its outbox publishes their events."""
    async with grpc.aio.insecure_channel(cluster.address("wallet")) as channel:
        wallet = wallet_pb2_grpc.WalletServiceStub(channel)
        run = os.urandom(3).hex()
        for n in range(count):
            await wallet.Deposit(
                wallet_pb2.DepositRequest(
                    idempotency_key=f"bench:{run}:{n}", player_id=f"p{run}{n % 50}", amount=100
                ),
                metadata=[("x-operator-token", cluster.state["operator_token"])],
            )


def _broker_pids(cluster: RunningCluster) -> dict[str, int]:
    return {k: v for k, v in cluster.pids.items() if k in ("kafka", "seaweedfs")}


async def _idle_cpu(cluster: RunningCluster, seconds: float = 10.0) -> float:
    """The broker's share of a core with nothing produced: what its consumers' polling costs."""
    pid = _broker_pids(cluster)["kafka"]
    before = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds


async def _steady(cluster: RunningCluster, feeder: Feeder, watcher: Watcher) -> dict[str, Any]:
    pids = _broker_pids(cluster)
    idle = await _idle_cpu(cluster)
    watcher.latency.clear()
    watcher.to_kafka.clear()
    watcher.from_kafka.clear()
    watcher.into_gen.clear()
    watcher.recording = True
    events = int(STEADY_RATE * STEADY_S)
    windows: list[dict[str, float]] = []  # CPU ms per event by part, window by window
    for _ in range(WINDOWS):
        cpu = {k: cpu_seconds(p) for k, p in pids.items()}
        await asyncio.gather(feeder.feed(events, STEADY_RATE), _wallet_ops(cluster, 100))
        windows.append({k: 1000 * (cpu_seconds(p) - cpu[k]) / events for k, p in pids.items()})
    await asyncio.sleep(3)  # the last ones through
    watcher.recording = False
    totals = sorted(sum(w.values()) for w in windows)
    middle = next(w for w in windows if sum(w.values()) == totals[len(totals) // 2])
    return {
        "ms_per_event": totals[len(totals) // 2],  # the median window: one burst moves it not
        "window_range": (totals[0], totals[-1]),
        "by_part": middle,
        "p50": _pct(watcher.latency, 0.5),
        "p99": _pct(watcher.latency, 0.99),
        "p99_to_kafka": _pct(watcher.to_kafka, 0.99),
        "p99_from_kafka": _pct(watcher.from_kafka, 0.99),
        "slow_into_gen": _slow_into_gen(watcher),
        "read": len(watcher.latency),
        "rss_mb": _rss_mb(pids["kafka"]),
        "idle": idle,
    }


def _slow_into_gen(watcher: Watcher) -> str:
    """Where in their generation the slowest 2% of reads were produced: by second of it."""
    if not watcher.from_kafka:
        return ""
    cut = _pct(watcher.from_kafka, 0.98)
    slow = [int(g) for f, g in zip(watcher.from_kafka, watcher.into_gen, strict=True) if f >= cut]
    counts = [slow.count(sec) for sec in range(int(watcher.log.rotate_s))]
    return " ".join(str(c) for c in counts)


async def _generations(cluster: RunningCluster) -> int:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=cluster.state["kafka_bootstrap"])
    await admin.start()
    try:
        topics = await admin.list_topics()
    finally:
        await admin.close()
    namespace = Namespace(cluster.state["kafka_namespace"])
    return len(namespace.generations(TABLE_EVENTS, topics))


async def _memory_run(cluster: RunningCluster) -> None:
    feeder, watcher = Feeder(cluster), Watcher(cluster)
    watching = asyncio.create_task(watcher.run())
    try:
        await asyncio.sleep(5)  # the consumer takes up the generations
        empty = await _steady(cluster, feeder, watcher)
        gens_empty = await _generations(cluster)
        started = time.monotonic()
        await feeder.feed(AGING_EVENTS, None)
        fed_s = time.monotonic() - started
        await asyncio.sleep(3 * ROTATE_S + 60)  # consumers catch up; the keepers delete
        aged = await _steady(cluster, feeder, watcher)
        gens_aged = await _generations(cluster)
        for name, r, gens in (
            ("empty log", empty, gens_empty),
            ("after 1M events", aged, gens_aged),
        ):
            print(
                f"   memory, {name:<16} Tansu {r['ms_per_event']:.3f} ms CPU/event "
                f"(windows {r['window_range'][0]:.3f}-{r['window_range'][1]:.3f})   consumer "
                f"latency p50 {r['p50'] * 1000:5.0f} ms  p99 {r['p99'] * 1000:5.0f} ms   "
                f"Tansu RSS {r['rss_mb']:5.0f} MB   generations held {gens}   "
                f"idle Tansu {100 * r['idle']:.1f}% of a core\n"
                f"     of it p99 commit -> relay's produce {r['p99_to_kafka'] * 1000:5.0f} ms, "
                f"produce -> read {r['p99_from_kafka'] * 1000:5.0f} ms; the slowest 2% of "
                f"reads by second into their generation: {r['slow_into_gen']}"
            )
        print(
            f"   1,000,000 events fed in {fed_s:.0f} s; CPU per event after/before "
            f"{aged['ms_per_event'] / empty['ms_per_event']:.2f} (goal within 1.20), "
            f"p99 after {aged['p99'] * 1000:.0f} ms (goal < 1000)"
        )
    finally:
        watcher.stop.set()
        await watching
        await feeder.close()


async def _s3_run(cluster: RunningCluster) -> None:
    feeder, watcher = Feeder(cluster), Watcher(cluster)
    watching = asyncio.create_task(watcher.run())
    try:
        await asyncio.sleep(5)
        r = await _steady(cluster, feeder, watcher)
        parts = "  ".join(f"{k} {v:.3f}" for k, v in r["by_part"].items())
        print(
            f"   s3,     empty log        SeaweedFS + Tansu {r['ms_per_event']:.3f} ms CPU/event "
            f"({parts})   consumer latency p50 {r['p50'] * 1000:5.0f} ms  "
            f"p99 {r['p99'] * 1000:5.0f} ms"
        )
    finally:
        watcher.stop.set()
        await watching
        await feeder.close()


def run() -> None:
    # The feeder commits outside the table replicas, so their relays find its tables by their
    # sweep (their own commits leave at once): sweeping every 0.1 s, not 5.
    env = {
        "BG_KAFKA_ROTATE_S": str(ROTATE_S),
        "BG_LOG_LEVEL": "WARNING",
        "BG_TABLE_RELAY_SWEEP_S": "0.1",
    }
    with local_cluster(Path(tempfile.mkdtemp(prefix="bench-events-")), env) as cluster:
        asyncio.run(_memory_run(cluster))
    with local_cluster(
        Path(tempfile.mkdtemp(prefix="bench-events-s3-")), env, "--kafka-storage", "s3"
    ) as cluster:
        asyncio.run(_s3_run(cluster))
