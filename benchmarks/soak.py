"""`make soak` / `python -m benchmarks.soak`: many live tables on real distributed parts.

Starts `bgcluster up --valkey-cluster 3 --replicas gateway=2 --replicas table=3 --replicas
wallet=2 --replicas leaderboard=2` (on an embedded PostgreSQL), deals `--tables` wagered matches
to 1 between funded guests (the two players of a table log in on different gateways), opens every
player's Play stream (two per table), lets a fraction of the tables play (scripted pairs, a new
table after each match) while the rest sit idle on their turn clocks (each 46.5 s timeout rolls,
plays the first legal play and starts the opponent's clock: RULES turn clock, I-7), and runs for
`--minutes`. A third of the way in it kills -9 a table replica; two thirds in it freezes a
Valkey primary until its replica takes over, then kills it -9: by default (`--freeze feeds`)
the one holding the gateways' pub/sub feeds, whose loss makes every stream refill at once.
Prints (and writes as JSON with --json) memory per open stream and per live table (gateways,
table replicas, Valkey), clock lateness p50/p99/max from the `timed_out` events the streams
receive, commands/s, errors, and deadlines doubled (two timeouts of one deadline) or missed (a
table whose announced deadline is long past at the end), and every process's garbage
collections during the run (pauses and the collector's CPU, those over 20 ms) and event-loop
stalls (probes over 20 ms late: busy, or waiting for a core). Lateness counts the run's
deadlines: those due while dealing are reported apart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.table.v1 import table_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.player import Player
from infra.cluster.runner import Cluster, ClusterConfig
from infra.cluster.valkey_cluster import NODE_TIMEOUT_MS
from services.common import balanced
from services.contracts import peers
from services.contracts.vocabulary import FINISHED

BET = 100
FUNDS = 1_000_000  # diamonds each simulated player is given: match after match, never short
MISSED_AFTER_MS = 10_000  # a deadline this far past at the end was missed (not merely late)
# A deadline due within this long of a kill (or of the end of a Valkey primary's freeze) counts
# as "in a failover": the shard lease (0.75 s) or the cluster's failover must pass first.
FAILOVER_WINDOW_MS = 10_000
STILL_FROZEN_S = 5.0
# A player's command waits this long for its answer (client/play_wire.py): an error raised
# within it of a failover's window is the failover's (the command went out in the window).
ANSWER_BOUND_MS = 30_000


@dataclass
class Stats:
    lateness_ms: list[tuple[int, int]] = field(default_factory=list)  # (deadline, lateness)
    late_tables: list[str] = field(default_factory=list)  # lateness_ms's tables, in its order
    timeouts: dict[str, set[tuple[int, int]]] = field(default_factory=dict)  # table -> seen
    doubled: int = 0
    events: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)  # (wall ms, what)
    streams_open: int = 0

    def error(self, what: str) -> None:
        self.errors.append((int(time.time() * 1000), what))

    def error_counts(
        self, dealt_ms: int, run_ms: int, failovers: list[tuple[int, int]]
    ) -> dict[str, Any]:
        """Errors while dealing, while every stream opened, then in the run split into steady
        and within a failover."""
        out: dict[str, dict[str, int]] = {
            "dealing": {},
            "opening_streams": {},
            "steady": {},
            "in_failovers": {},
        }
        for at, what in self.errors:
            phase = (
                "dealing"
                if at < dealt_ms
                else "opening_streams"
                if at < run_ms
                else "in_failovers"
                if any(a <= at <= b + ANSWER_BOUND_MS for a, b in failovers)
                else "steady"
            )
            out[phase][what] = out[phase].get(what, 0) + 1
        return out

    def timed_out(self, table_id: str, seq: int, deadline_ms: int, now_ms: int) -> None:
        seen = self.timeouts.setdefault(table_id, set())
        if any(d == deadline_ms and s != seq for s, d in seen):
            self.doubled += 1
        if (seq, deadline_ms) not in seen:
            seen.add((seq, deadline_ms))
            self.lateness_ms.append((deadline_ms, max(0, now_ms - deadline_ms)))
            self.late_tables.append(table_id)


def _gist(exc: BaseException) -> str:
    """An error's message without its ids (tables, seconds), to count alike errors together."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return exc.code().name
    words = str(exc).split()[:6]
    return " ".join(w for w in words if not any(ch.isdigit() for ch in w)) or "-"


def _timeline(
    lateness: list[tuple[int, int]], start_ms: int, failovers: list[tuple[int, int]]
) -> list[dict[str, Any]]:
    buckets: dict[int, list[int]] = {}
    for at, late in lateness:
        if at >= start_ms:
            buckets.setdefault((at - start_ms) // 10_000, []).append(late)
    return [
        {
            "from_s": 10 * b,
            **_lateness(values),
            "failover": any(a <= start_ms + 10_000 * b + 5_000 <= z for a, z in failovers),
        }
        for b, values in sorted(buckets.items())
    ]


def _lateness(values: list[int]) -> dict[str, float]:
    return {
        "count": len(values),
        "p50": _percentile(values, 0.5),
        "p99": _percentile(values, 0.99),
        "max": max(values, default=0),
    }


def _percentile(values: list[int], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


async def _valkey_used(cluster: Cluster) -> int:
    import redis.asyncio as redis_asyncio

    total = 0
    for name, url in cluster.infra_addresses.items():
        if not name.startswith("valkey"):
            continue
        client: Any = redis_asyncio.Redis.from_url(url, socket_connect_timeout=1)
        try:
            role = (await client.execute_command("ROLE"))[0].decode()
            if role == "master":
                total += int((await client.info("memory"))["used_memory"])
        except Exception:
            pass
        finally:
            await client.aclose()
    return total


def _processes() -> dict[int, tuple[int, float]]:
    """Every process: pid -> (parent pid, user + system CPU seconds used)."""
    out: dict[int, tuple[int, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return out


def _cpu(cluster: Cluster) -> dict[str, float]:
    """CPU seconds by part, each process with its children (PostgreSQL's backends): services
    by service, infrastructure by kind (valkey-3 -> valkey), and this load generator. A process
    that died takes its seconds with it."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)

    def tree(pid: int) -> float:
        return table.get(pid, (0, 0.0))[1] + sum(tree(c) for c in children.get(pid, []))

    out: dict[str, float] = {"load generator": table.get(os.getpid(), (0, 0.0))[1]}
    procs = [(i.service, i.process) for i in cluster.instances if i.process is not None]
    procs += [(p.name.split("-")[0], p) for p in cluster.infra]
    for kind, proc in procs:
        if proc.pid is not None:
            out[kind] = out.get(kind, 0.0) + tree(proc.pid)
    return out


GC_BOUND_S = 0.02  # issue 43: no collection may stop a process for longer
GC_METRICS = ("bg_gc_pause_seconds", "bg_gc_cpu_seconds")
LAG_METRIC, STALLS_METRIC = "bg_event_loop_lag_seconds", "bg_event_loop_stalls"


Histograms = dict[str, tuple[int, dict[str, dict[str, float]]]]


def _process_histograms(cluster: Cluster) -> Histograms:
    """Each instance's process, its collections and its event-loop probes so far: {instance:
    (pid, {"<metric>:<generation or cause>": {count, sum, over, over_50ms}})}, `over` being those
    longer than GC_BOUND_S (a counter's value is its count)."""
    from prometheus_client.parser import text_string_to_metric_families

    from infra.cluster.local_cluster import metrics_page

    out: Histograms = {}
    for inst in cluster.instances:
        pid = inst.process.pid if inst.process is not None else None
        text = metrics_page(f"http://{inst.host}:{inst.metrics_port}/metrics")
        if not text:
            continue
        found: dict[str, dict[str, float]] = {}
        for family in text_string_to_metric_families(text):
            if family.name not in (*GC_METRICS, LAG_METRIC, STALLS_METRIC):
                continue
            for sample in family.samples:
                label = sample.labels.get("generation") or sample.labels.get("cause") or ""
                key = f"{family.name}:{label}"
                row = found.setdefault(key, {"count": 0.0, "sum": 0.0, "within": 0.0})
                if sample.name.endswith(("_count", "_total")):
                    row["count"] = sample.value
                elif sample.name.endswith("_sum"):
                    row["sum"] = sample.value
                elif sample.name.endswith("_bucket") and float(sample.labels["le"]) == GC_BOUND_S:
                    row["within"] = sample.value
                elif sample.name.endswith("_bucket") and float(sample.labels["le"]) == 0.05:
                    row["within_50ms"] = sample.value
        out[inst.name] = (
            pid or 0,
            {
                k: {
                    "count": r["count"],
                    "sum": r["sum"],
                    "over": r["count"] - r["within"],
                    "over_50ms": r["count"] - r.get("within_50ms", r["count"]),
                }
                for k, r in found.items()
            },
        )
    return out


def _gc_report(before: Histograms, after: Histograms) -> dict[str, dict[str, Any]]:
    """Collections during the run by instance and generation: how many, the mean pause and CPU
    (ms), and how many stopped the process for longer than GC_BOUND_S (an instance restarted
    meanwhile counts from its restart)."""
    report: dict[str, dict[str, Any]] = {}
    for name, (pid, rows) in sorted(after.items()):
        old_pid, old = before.get(name, (0, {}))
        restarted = pid != old_pid
        for key, row in sorted(rows.items()):
            metric, generation = key.split(":")
            if metric not in GC_METRICS:
                continue
            base = {} if restarted else old.get(key, {})
            n = row["count"] - base.get("count", 0)
            if n <= 0:
                continue
            entry = report.setdefault(name, {}).setdefault(f"gen{generation}", {})
            what = "pause" if metric == "bg_gc_pause_seconds" else "cpu"
            entry["collections"] = int(n)
            entry[f"{what}_mean_ms"] = round(1000 * (row["sum"] - base.get("sum", 0)) / n, 2)
            entry[f"{what}_over_20ms"] = int(row["over"] - base.get("over", 0))
    return report


def _loop_report(before: Histograms, after: Histograms) -> dict[str, dict[str, Any]]:
    """Each instance's event loop during the run (services/common/loop_lag.py): probes, their
    mean lateness (ms), how many ran more than 20 and 50 ms late, and the stalls (over 20 ms)
    by cause: busy (Python held the loop) or waiting (no core)."""
    report: dict[str, dict[str, Any]] = {}
    for name, (pid, rows) in sorted(after.items()):
        old_pid, old = before.get(name, (0, {}))
        base = {} if pid != old_pid else old  # restarted meanwhile: counts from its restart
        lag = _during(rows, base, f"{LAG_METRIC}:")
        if lag["count"] <= 0:
            continue
        report[name] = {
            "probes": int(lag["count"]),
            "lag_mean_ms": round(1000 * lag["sum"] / lag["count"], 2),
            "over_20ms": int(lag["over"]),
            "over_50ms": int(lag["over_50ms"]),
            "stalls_busy": int(_during(rows, base, f"{STALLS_METRIC}:busy")["count"]),
            "stalls_waiting": int(_during(rows, base, f"{STALLS_METRIC}:waiting")["count"]),
        }
    return report


def _during(
    rows: dict[str, dict[str, float]], base: dict[str, dict[str, float]], key: str
) -> dict[str, float]:
    """One histogram or counter row's change over the run (fields absent count as 0)."""
    now, then = rows.get(key, {}), base.get(key, {})
    return {f: now.get(f, 0.0) - then.get(f, 0.0) for f in ("count", "sum", "over", "over_50ms")}


def _memory(cluster: Cluster) -> dict[str, int]:
    out: dict[str, int] = {}
    for inst in cluster.instances:
        if inst.process is not None and inst.process.pid is not None:
            out[inst.service] = out.get(inst.service, 0) + _rss_kib(inst.process.pid) * 1024
    return out


async def _idle_stream(
    stub: gateway_pb2_grpc.GatewayServiceAsyncStub,
    token: str,
    table_id: str,
    report: bool,
    stats: Stats,
    stop: asyncio.Event,
) -> None:
    """A player connected and doing nothing: its table's clocks play for it. Resumes from the
    last seq it saw when the stream breaks (a gateway or Valkey failing over)."""
    last = 0
    metadata = [("authorization", f"Bearer {token}")]
    while not stop.is_set():
        requests: asyncio.Queue[gateway_pb2.PlayRequest | None] = asyncio.Queue()
        await requests.put(
            gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table_id, from_seq=last))
        )

        async def outgoing(q: asyncio.Queue[gateway_pb2.PlayRequest | None] = requests) -> Any:
            while (item := await q.get()) is not None:
                yield item

        call = stub.Play(outgoing(), metadata=metadata)
        stats.streams_open += 1
        try:
            async for message in call:
                if stop.is_set():
                    break
                if message.WhichOneof("kind") != "update":
                    continue
                for event in message.update.events:
                    last = max(last, event.seq)
                    stats.events += 1
                    if report and event.WhichOneof("body") == "timed_out":
                        out = event.timed_out
                        stats.timed_out(table_id, event.seq, out.deadline_ms, out.now_ms)
                if message.update.view.phase in FINISHED:
                    return
        except grpc.aio.AioRpcError as exc:
            if not stop.is_set():
                stats.error(f"stream:{exc.code().name}")
                await asyncio.sleep(1.0)
        finally:
            stats.streams_open -= 1
            await requests.put(None)
            call.cancel()


async def _playing_pair(
    pair: tuple[Player, Player],
    table_id: str,
    wallet: wallet_pb2_grpc.WalletServiceAsyncStub,
    token: str,
    stats: Stats,
    stop: asyncio.Event,
) -> None:
    """Two scripted players playing match after match (a new table each) until `stop`, each
    resuming after failures, so the number of live tables holds steady."""
    while not stop.is_set():
        views = await asyncio.gather(*(_play_out(p, table_id, stats, stop) for p in pair))
        if stop.is_set() or not all(v is not None and v.phase in FINISHED for v in views):
            return
        next_table = await _table_between(pair, wallet, token, stats)
        if next_table is None:
            return
        table_id = next_table


async def _play_out(
    player: Player, table_id: str, stats: Stats, stop: asyncio.Event
) -> table_pb2.TableView | None:
    while not stop.is_set():
        try:
            view = await player.play(table_id, timeout_s=3600)
            if view.phase in FINISHED:
                return view
        except (grpc.aio.AioRpcError, TimeoutError, ConnectionError, EOFError) as exc:
            if stop.is_set():
                return None
            stats.error(f"player:{type(exc).__name__}:{_gist(exc)}")
            await asyncio.sleep(1.0)
    return None


async def _table_between(
    pair: tuple[Player, Player],
    wallet: wallet_pb2_grpc.WalletServiceAsyncStub,
    token: str,
    stats: Stats,
) -> str | None:
    """A wagered match to 1 between the pair (logged in and funded here the first time), or
    None when 20 tries failed (an overloaded cluster: counted in the errors, not fatal)."""
    a, b = pair
    for _ in range(20):
        try:
            for p in pair:
                if not p.token:
                    await p.login()
                    await wallet.Deposit(
                        wallet_pb2.DepositRequest(
                            idempotency_key=f"soak:{p.player_id}",
                            player_id=p.player_id,
                            amount=FUNDS,
                        ),
                        metadata=[("x-operator-token", token)],
                    )
            options = table_pb2.TableOptions(profile="wagered", match_length=1, bet=BET)
            table = await a.create_table(options)
            await b.join(table.code)
            return str(table.table_id)
        except grpc.aio.AioRpcError as exc:
            stats.error(f"deal:{exc.code().name}")
            await asyncio.sleep(0.5)
    return None


async def _deal(
    channels: list[list[grpc.aio.Channel]],
    i: int,
    wallet: wallet_pb2_grpc.WalletServiceAsyncStub,
    token: str,
    stats: Stats,
    think_s: float,
) -> tuple[Player, Player, str] | None:
    """Two guests on different gateways and a wagered table between them."""
    tag = uuid.uuid4().hex[:8]
    a = Player(channels[0][i % len(channels[0])], f"soak{tag}a", seed=i, think_s=think_s)
    b = Player(channels[1][i % len(channels[1])], f"soak{tag}b", seed=i + 1, think_s=think_s)
    table_id = await _table_between((a, b), wallet, token, stats)
    return None if table_id is None else (a, b, table_id)


async def _fail_a_primary(
    cluster: Cluster, table_id: str, target: str
) -> tuple[float, list[tuple[int, int]]]:
    """Freeze a Valkey primary until the cluster promotes its replica and STILL_FROZEN_S more,
    then kill it -9 (the supervisor brings it back as a replica): `target` "table", the one
    serving `table_id`'s slot; "feeds", the one holding the gateways' table feeds (every
    stream of a gateway whose feed breaks refills at once), so
    the worst case is the one run each time. Returns the seconds until the promotion and the
    slot ranges the frozen primary served."""
    from redis.crc import key_slot

    from infra.cluster.valkey_cluster import primary_of, slots_served_by
    from services.contracts.redis_keys import table_key

    slot = key_slot(table_key(table_id).encode())
    urls = {n: u for n, u in cluster.infra_addresses.items() if n.startswith("valkey")}
    port = 0
    for _ in range(10):  # any node knows; an overloaded one may not answer in time
        for url in urls.values():
            with contextlib.suppress(Exception):
                port = port or await primary_of(url, slot)
        if port:
            break
        await asyncio.sleep(1.0)
    if target == "feeds":
        feeds = await _feeds_primary(list(urls.values()))
        if feeds:
            port = feeds
            any_url = next(iter(urls.values()))
            slot = (await slots_served_by(any_url, port))[0][0]
    victim_name = next(n for n, u in urls.items() if u.endswith(f":{port}/0"))
    victim = next(p for p in cluster.infra if p.name == victim_name)
    other = next(u for n, u in urls.items() if n != victim_name)
    served = await slots_served_by(other, port)
    assert victim.pid is not None
    started = time.monotonic()
    os.kill(victim.pid, signal.SIGSTOP)
    while time.monotonic() - started < 30:
        try:
            if await primary_of(other, slot) not in (0, port):
                break
        except Exception:
            pass
        await asyncio.sleep(0.2)
    frozen = time.monotonic() - started
    # Still frozen a while after it (a node cut off answers nothing and resets nothing): the
    # services' calls and subscriptions on it must time out, not wait for the kill.
    await asyncio.sleep(STILL_FROZEN_S)
    os.kill(victim.pid, signal.SIGKILL)
    return frozen, served


async def _feeds_primary(urls: list[str]) -> int:
    """The port of the node whose pub/sub clients hold the most channels (0: none holds any):
    the gateways' feeds, three channels per table with a stream there (a table replica's clock
    wake-ups hold a few). A replica is made primary first (CLUSTER FAILOVER), to be frozen as
    one."""
    import re

    import redis.asyncio as redis_asyncio

    best, most = "", 0
    for url in urls:
        client: Any = redis_asyncio.Redis.from_url(url, socket_connect_timeout=1)
        try:
            listed = await client.execute_command("CLIENT", "LIST", "TYPE", "pubsub")
        except Exception:
            continue
        finally:
            await client.aclose()
        text = listed.decode() if isinstance(listed, bytes) else str(listed)
        channels = sum(int(n) for n in re.findall(r"\bsub=(\d+)", text))
        if channels > most:
            best, most = url, channels
    if not best:
        return 0
    client = redis_asyncio.Redis.from_url(best, socket_connect_timeout=1)
    try:
        if (await client.execute_command("ROLE"))[0] not in (b"master", "master"):
            await client.execute_command("CLUSTER", "FAILOVER")
            for _ in range(50):
                await asyncio.sleep(0.2)
                if (await client.execute_command("ROLE"))[0] in (b"master", "master"):
                    break
    finally:
        await client.aclose()
    return int(best.rsplit(":", 1)[1].split("/")[0])


def _by_node(
    stats: Stats, window: tuple[int, int], served: list[tuple[int, int]]
) -> dict[str, dict[str, float]]:
    inside = [
        (table, late)
        for (at, late), table in zip(stats.lateness_ms, stats.late_tables, strict=True)
        if window[0] <= at <= window[1]
    ]
    frozen = _on_frozen_node([table for table, _ in inside], served)
    return {
        "frozen_node": _lateness([late for (_, late), f in zip(inside, frozen, strict=True) if f]),
        "other_nodes": _lateness(
            [late for (_, late), f in zip(inside, frozen, strict=True) if not f]
        ),
    }


def _on_frozen_node(tables: list[str], served: list[tuple[int, int]]) -> list[bool]:
    from redis.crc import key_slot

    from services.contracts.redis_keys import table_key

    slots = [key_slot(table_key(t).encode()) for t in tables]
    return [any(low <= slot <= high for low, high in served) for slot in slots]


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(args.data_dir or tempfile.mkdtemp(prefix="bg-soak-"))
    data.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (before anything runs)
    log = (data / "cluster.log").open("w")
    os.environ.setdefault("BG_LOG_LEVEL", "WARNING")
    # Every simulated player comes from 127.0.0.1: the per-address flood guard would count them
    # as one client. Per-player limits stay as configured.
    os.environ.setdefault("BG_RATE_PER_PEER_S", "1000000")
    config = ClusterConfig(
        replicas={"table": 3, "gateway": 2, "wallet": 2, "leaderboard": 2},
        data_dir=data / "data",
        base_port=0,
        valkey_cluster=3,
        valkey_node_timeout_ms=args.valkey_node_timeout_ms,
        startup_timeout_s=120,
    )
    cluster = Cluster(config, log)
    await cluster.start()
    stats = Stats()
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    options = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_concurrent_streams", 100_000)]
    gateways = [i.address for i in cluster.instances if i.service == "gateway"]
    channels = [
        [grpc.aio.insecure_channel(g, options=options) for _ in range(args.connections)]
        for g in gateways
    ]
    wallet_address = ",".join(i.address for i in cluster.instances if i.service == "wallet")
    wallet_channel = balanced.channel_to(peers.WALLET, wallet_address)
    wallet = wallet_pb2_grpc.WalletServiceStub(wallet_channel)
    result: dict[str, Any] = {
        "tables": args.tables,
        "minutes": args.minutes,
        "valkey_node_timeout_ms": args.valkey_node_timeout_ms,
    }
    try:
        before = _memory(cluster)
        valkey_before = await _valkey_used(cluster)
        started = time.monotonic()
        deal_cpu0 = _cpu(cluster)
        sem = asyncio.Semaphore(args.concurrency)

        # Which tables play; the others sit idle on their clocks. Each table's streams open as
        # soon as it is dealt: a player with no stream is away from the deal (I-41), and a
        # table whose players are both away past the window ends (I-9).
        playing = set(random.Random(7).sample(range(args.tables), int(args.playing * args.tables)))
        players: list[Player] = []

        async def deal(i: int) -> tuple[Player, Player, str] | None:
            async with sem:
                made = await _deal(channels, i, wallet, cluster.operator_token, stats, args.think)
            if made is None:
                return None
            a, b, table_id = made
            if i in playing:
                players.extend((a, b))
                tasks.append(
                    asyncio.create_task(
                        _playing_pair((a, b), table_id, wallet, cluster.operator_token, stats, stop)
                    )
                )
            else:
                for p, report in ((a, True), (b, False)):
                    tasks.append(
                        asyncio.create_task(
                            _idle_stream(p.stub, p.token, table_id, report, stats, stop)
                        )
                    )
            return made

        dealt = [d for d in await asyncio.gather(*(deal(i) for i in range(args.tables))) if d]
        idle = len([i for i in range(args.tables) if i not in playing])
        dealt_ms = int(time.time() * 1000)
        result["tables_dealt"] = len(dealt)
        result["deal_s"] = round(time.monotonic() - started, 1)
        result["deal_cpu_percent_of_a_core"] = {
            k: round(100 * (v - deal_cpu0.get(k, 0.0)) / result["deal_s"], 1)
            for k, v in sorted(_cpu(cluster).items(), key=lambda kv: -kv[1])
        }
        for _ in range(600):  # every stream open (playing sessions open their own)
            if stats.streams_open >= 2 * idle - 2 * (args.tables - len(dealt)):
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(5)
        after = _memory(cluster)
        valkey_after = await _valkey_used(cluster)
        streams = 2 * len(dealt)
        result["memory"] = {
            "gateway_bytes_per_stream": round(
                (after.get("gateway", 0) - before.get("gateway", 0)) / streams
            ),
            "table_bytes_per_table": round(
                (after.get("table", 0) - before.get("table", 0)) / len(dealt)
            ),
            "valkey_bytes_per_table": round((valkey_after - valkey_before) / len(dealt)),
            "rss_mib": {k: round(v / 2**20) for k, v in after.items()},
        }
        result["streams_open"] = stats.streams_open
        print(
            f"soak: {len(dealt)} tables dealt in {result['deal_s']} s, {stats.streams_open} "
            f"idle streams open; running {args.minutes} min",
            file=sys.stderr,
            flush=True,
        )
        run_s = args.minutes * 60
        t0 = time.monotonic()
        run_from_ms = int(time.time() * 1000)
        commands0 = sum(p.commands_sent for p in players)
        cpu0 = _cpu(cluster)
        gc0 = await asyncio.to_thread(_process_histograms, cluster)
        await asyncio.sleep(run_s / 3)
        failovers: list[tuple[int, int]] = []  # (from, to) wall ms: a part dead, and after
        killed_ms = int(time.time() * 1000)
        victim = next(i for i in cluster.instances if i.name == "table-2")
        assert victim.process is not None and victim.process.pid is not None
        os.kill(victim.process.pid, signal.SIGKILL)
        result["killed_table_replica"] = "table-2"
        failovers.append((killed_ms, killed_ms + FAILOVER_WINDOW_MS))
        await asyncio.sleep(run_s / 3)
        frozen_ms = int(time.time() * 1000)
        promoted_s, served = await _fail_a_primary(cluster, dealt[0][2], args.freeze)
        result["valkey_primary_frozen_s"] = round(promoted_s, 1)
        result["valkey_primary_frozen"] = args.freeze
        failovers.append((frozen_ms, int(time.time() * 1000) + FAILOVER_WINDOW_MS))
        valkey_window = failovers[-1]
        await asyncio.sleep(max(0.0, run_s - (time.monotonic() - t0)))
        elapsed = time.monotonic() - t0
        run_to_ms = int(time.time() * 1000)
        commands = sum(p.commands_sent for p in players) - commands0
        cpu = {k: v - cpu0.get(k, 0.0) for k, v in _cpu(cluster).items()}
        gc1 = await asyncio.to_thread(_process_histograms, cluster)
        result["gc_during_run"] = _gc_report(gc0, gc1)
        result["event_loops_during_run"] = _loop_report(gc0, gc1)
        result["cpu_percent_of_a_core"] = {  # a killed process's own seconds are lost
            k: round(100 * v / elapsed, 1) for k, v in sorted(cpu.items(), key=lambda kv: -kv[1])
        }

        # Missed deadlines: a live table whose announced deadline is long past.
        now_ms = int(time.time() * 1000)

        async def missed_on(player: Player, table_id: str) -> bool:
            async with sem:
                try:
                    view = await asyncio.wait_for(player.view(table_id), 10)
                except (grpc.aio.AioRpcError, TimeoutError):
                    stats.error("final_view")
                    return False
            late = now_ms - view.deadline_ms > MISSED_AFTER_MS
            return view.phase not in FINISHED and bool(view.deadline_ms) and late

        missed = sum(await asyncio.gather(*(missed_on(a, t) for a, _, t in dealt)))
        # The run's deadlines only: those due while the tables were dealt are reported apart,
        # and those due after it met the harness's own final reads of every table.
        in_run = [(at, late) for at, late in stats.lateness_ms if run_from_ms <= at <= run_to_ms]
        result.update(
            {
                "clock_lateness_while_dealing_ms": _lateness(
                    [late for at, late in stats.lateness_ms if at < run_from_ms]
                ),
                "clock_lateness_ms": _lateness([late for _, late in in_run]),
                "clock_lateness_steady_ms": _lateness(
                    [late for at, late in in_run if not any(a <= at <= b for a, b in failovers)]
                ),
                "clock_lateness_in_failovers_ms": _lateness(
                    [late for at, late in in_run if any(a <= at <= b for a, b in failovers)]
                ),
                # Each 10 s of the run: when the late deadlines fell (a failover's tail beyond its
                # window, a pause of one part), offsets in s from the run's start.
                "clock_lateness_by_10s": _timeline(in_run, run_from_ms, failovers),
                # The Valkey primary's window: the deadlines it served (which wait for its replica's
                # promotion) apart from the other nodes' (which should not notice).
                "clock_lateness_valkey_window_ms": _by_node(stats, valkey_window, served),
                "deadlines_doubled": stats.doubled,
                "deadlines_missed": missed,
                "commands_per_s": round(commands / elapsed, 1),
                "events_received": stats.events,
                "errors": stats.error_counts(dealt_ms, run_from_ms, failovers),
                "restarts": {
                    n: cluster.supervisor.restarts(n)
                    for n in [
                        *(i.name for i in cluster.instances),
                        *(p.name for p in cluster.infra),
                    ]
                    if cluster.supervisor.restarts(n)
                },
            }
        )
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for group in channels:
            for ch in group:
                await ch.close(None)
        await wallet_channel.close(None)
        await cluster.stop()
        log.close()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__)
    p.add_argument("--tables", type=int, default=10_000)
    p.add_argument("--playing", type=float, default=0.02, help="fraction of tables playing")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--think", type=float, default=2.0, help="playing seats' seconds a command")
    p.add_argument("--connections", type=int, default=16, help="channels per gateway")
    p.add_argument("--concurrency", type=int, default=64, help="deals in flight")
    p.add_argument(
        "--valkey-node-timeout-ms", type=int, default=NODE_TIMEOUT_MS, help="silence to a failover"
    )
    p.add_argument(
        "--freeze",
        choices=("feeds", "table"),
        default="feeds",
        help="the Valkey primary frozen: the one holding the gateways' feeds, or a table's",
    )
    p.add_argument("--data-dir")
    p.add_argument("--json", help="also write the summary here")
    args = p.parse_args(argv)
    result = asyncio.run(soak(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    ok = result.get("deadlines_doubled") == 0 and result.get("deadlines_missed") == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
