"""Gateway command path vs a bare grpc.aio echo, side by side in one run, same client machinery.

Echo: a bare grpc.aio bidirectional echo server (its own process); 20 concurrent streams, each
on its own connection, each sends a message and waits for it to come back.
Gateway: a whole local cluster (`bgcluster up`, clocks x0.05); 20 casual tables (match to 7),
both players each on their own connection and Play stream; whoever must act sends a random legal
play (or roll/confirm) and waits until the pushed view shows it: no GetView anywhere. Latency is
send -> the pushed view that shows the command.
Reported: echo calls/s and applied commands/s (and their ratio), latency p50/p99, server CPU per
call / per applied command summed over every cluster process (from /proc), Redis round trips per
applied command counted by the services' clients; then the same with each command's answer
apart from its update (a Join without `results_in_updates`: three messages a commit instead of
two) and at half the peak rate. Last, the floor (benchmarks/floor_servers.py): the same hops with
no rules and raw bytes of the real messages' sizes, the least this design can cost per command:
at its own peak, and paced to the cluster's peak and half-peak rates. Issue 43's goal is read
there, at the same offered rate (a server batches more at its own peak): server CPU per command,
the analysis apart, <= 2.5x the floor's (bar 3.5x), the gateway <= 2x the floor's front, the
table replicas <= 3x its back. The analysis is reported as CPU per match analysed.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc

from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.play_wire import next_command
from client.player import Player
from engine import bots
from infra.cluster.embedded import free_port, start_valkey
from infra.cluster.local_cluster import (
    RunningCluster,
    cpu_of,
    cpu_seconds,
    local_cluster,
    scrape_total,
)
from services.contracts.vocabulary import FINISHED

TABLES = 20
SECONDS = float(os.environ.get("BG_BENCH_SECONDS", "12"))  # longer to profile it
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


class Pace:
    """A shared token bucket: at most `rate` sends per second (None: as fast as possible)."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.next = time.monotonic()

    async def wait(self) -> None:
        if self.rate is None:
            return
        now = time.monotonic()
        self.next = max(self.next, now) + 1 / self.rate
        delay = self.next - 1 / self.rate - now
        if delay > 0:
            await asyncio.sleep(delay)


# -- echo ------------------------------------------------------------------------------------


async def _echo_stream(address: str, until: float, lat: list[float], pace: Pace) -> int:
    payload = os.urandom(48)
    async with grpc.aio.insecure_channel(address, options=OPTIONS) as channel:
        chat = channel.stream_stream("/bench.Echo/Chat", None, None)
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def outgoing() -> AsyncIterator[bytes]:
            while (item := await queue.get()) is not None:
                yield item

        call = chat(outgoing())
        done = 0
        while time.monotonic() < until:
            await pace.wait()
            started = time.perf_counter()
            await queue.put(payload)
            await call.read()
            lat.append(time.perf_counter() - started)
            done += 1
        await queue.put(None)
        call.cancel()
        return done


async def _echo(address: str, pid: int, rate: float | None = None) -> dict[str, float]:
    lat: list[float] = []
    cpu = cpu_seconds(pid)
    started = time.monotonic()
    until = started + SECONDS
    pace = Pace(rate)
    counts = await asyncio.gather(*(_echo_stream(address, until, lat, pace) for _ in range(TABLES)))
    elapsed = time.monotonic() - started
    calls = sum(counts)
    return {
        "per_s": calls / elapsed,
        "p50_ms": _pct(lat, 0.5) * 1000,
        "p99_ms": _pct(lat, 0.99) * 1000,
        "cpu_ms": (cpu_seconds(pid) - cpu) * 1000 / max(1, calls),
    }


# -- gateway ---------------------------------------------------------------------------------


async def _new_table(pair: list[Player]) -> str:
    table = await pair[0].create_table(table_pb2.TableOptions(profile="casual", match_length=7))
    await pair[1].join(table.code)
    await pair[0].rpc(
        pair[0].stub.StartTable, matchmaking_pb2.TableRequest(table_id=table.table_id)
    )
    return str(table.table_id)


def _at_least(seq: int) -> Callable[[table_pb2.TableView], bool]:
    return lambda v: v.seq >= seq


class Sizes:
    """The mean bytes of what a seat is sent per commit, and of its events."""

    def __init__(self) -> None:
        self.updates = self.update_bytes = self.event_bytes = 0

    def seen(self, update: gateway_pb2.SeatUpdate) -> None:
        self.updates += 1
        self.update_bytes += update.ByteSize()
        self.event_bytes += sum(ev.ByteSize() for ev in update.events)

    def mean(self) -> tuple[int, int]:
        n = max(1, self.updates)
        return self.update_bytes // n, self.event_bytes // n


async def _drive(
    pair: list[Player],
    until: float,
    lat: list[float],
    pace: Pace,
    rng: random.Random,
    combine: bool = True,
    sizes: Sizes | None = None,
    finished: list[int] | None = None,
) -> int:
    applied = 0
    while time.monotonic() < until:
        table_id = await _new_table(pair)
        sessions = [p.session_for(table_id, results_in_updates=combine) for p in pair]
        for s in sessions:
            if sizes is not None:
                s.on_update = sizes.seen
            await s.open()
        try:
            while time.monotonic() < until:
                views = [s.view for s in sessions]
                newest = max(views, key=lambda v: v.seq if v is not None else -1)
                assert newest is not None
                if newest.phase in FINISHED:
                    if finished is not None:
                        finished.append(1)
                    break
                seat = newest.decider
                session = sessions[seat]
                v = await session.wait_for(_at_least(newest.seq), 10)
                cmd = next_command(v, bots.random_bot, rng)
                if cmd is None:  # between games: wait for the deal
                    await session.wait_newer(v.seq, 10)
                    continue
                await pace.wait()
                started = time.perf_counter()
                try:
                    await session.send(cmd, v.seq)
                except Exception:  # a clock moved the table first (STALE_SEQ): look again
                    continue
                lat.append(time.perf_counter() - started)
                applied += 1
        finally:
            for s in sessions:
                await s.close()
    return applied


async def _gateway(
    cluster: RunningCluster,
    pairs: list[list[Player]],
    rate: float | None = None,
    combine: bool = True,
    sizes: Sizes | None = None,
) -> dict[str, float]:
    lat: list[float] = []
    pids = cluster.pids
    cpu = cpu_of(pids)
    trips = cluster.round_trips()
    started = time.monotonic()
    until = started + SECONDS
    pace = Pace(rate)
    finished: list[int] = []
    counts = await asyncio.gather(
        *(
            _drive(pair, until, lat, pace, random.Random(i), combine, sizes, finished)
            for i, pair in enumerate(pairs)
        )
    )
    elapsed = time.monotonic() - started
    applied = sum(counts)
    used = {k: v - cpu[k] for k, v in cpu_of(pids).items()}
    return {
        "per_s": applied / elapsed,
        "matches": len(finished),
        "p50_ms": _pct(lat, 0.5) * 1000,
        "p99_ms": _pct(lat, 0.99) * 1000,
        "cpu_ms": sum(used.values()) * 1000 / max(1, applied),
        "round_trips": (cluster.round_trips() - trips) / max(1, applied),
        **{f"cpu_ms:{k}": v * 1000 / max(1, applied) for k, v in sorted(used.items())},
    }


async def _players(cluster: RunningCluster) -> tuple[list[list[Player]], list[grpc.aio.Channel]]:
    channels = [
        grpc.aio.insecure_channel(cluster.address("gateway"), options=OPTIONS)
        for _ in range(2 * TABLES)
    ]
    players = [Player(ch, f"bench-{i}", seed=i) for i, ch in enumerate(channels)]
    for p in players:
        await p.login()
    return [players[i : i + 2] for i in range(0, len(players), 2)], channels


def _line(name: str, r: dict[str, float], unit: str) -> str:
    return (
        f"   {name:<28} {r['per_s']:8.0f} {unit}/s   p50 {r['p50_ms']:6.1f} ms   "
        f"p99 {r['p99_ms']:6.1f} ms   server CPU {r['cpu_ms']:5.2f} ms/{unit}"
    )


def _analysis_now(cluster: RunningCluster) -> tuple[float, float]:
    """The analysis service's CPU seconds and matches analysed so far."""
    metrics = next(s["metrics"] for s in cluster.state["services"] if s["name"] == "analysis")
    return cpu_seconds(cluster.pids["analysis"]), scrape_total(metrics, ANALYSED)


async def _analysis_since(
    cluster: RunningCluster, start: tuple[float, float], bound_s: int = 120
) -> tuple[float, float]:
    """The analysis's CPU seconds and matches analysed since `start`, once its queue is empty
    (bounded): the matches of the measured phases are analysed after they end."""
    metrics = next(s["metrics"] for s in cluster.state["services"] if s["name"] == "analysis")
    for _ in range(int(bound_s)):
        if scrape_total(metrics, "bg_analysis_backlog") == 0:
            break
        await asyncio.sleep(1)
    cpu, done = _analysis_now(cluster)
    return cpu - start[0], done - start[1]


ANALYSED = "bg_analysis_matches_total"
GOAL_X, BAR_X, GATEWAY_X, TABLE_X = 2.5, 3.5, 2.0, 3.0  # issue 43: x the floor, same rate


def _against_floor(name: str, cluster: dict[str, float], floor: dict[str, float]) -> str:
    """Server CPU per command, the analysis apart, against the floor's at the same rate."""
    total = cluster["cpu_ms"] - cluster.get("cpu_ms:analysis", 0.0)
    table = cluster.get("cpu_ms:table-1", 0.0) + cluster.get("cpu_ms:table-2", 0.0)
    x = total / floor["cpu_ms"]
    gateway_x = cluster["cpu_ms:gateway"] / floor["cpu_ms:front"]
    table_x = table / floor["cpu_ms:back"]
    verdict = "goal met" if x <= GOAL_X else ("bar met" if x <= BAR_X else "over the bar")
    return (
        f"   at the cluster's {name} ({cluster['per_s']:.0f} cmd/s, the floor paced to "
        f"{floor['per_s']:.0f}): {total:.2f} ms per command without the analysis = {x:.1f}x the "
        f"floor's {floor['cpu_ms']:.2f} (goal <= {GOAL_X}, bar <= {BAR_X}: {verdict}); gateway "
        f"{gateway_x:.1f}x the front (goal <= {GATEWAY_X}), table replicas {table_x:.1f}x the "
        f"back (goal <= {TABLE_X}), Valkey {cluster['cpu_ms:valkey'] / floor['cpu_ms:valkey']:.1f}x"
    )


async def _main(cluster: RunningCluster, echo_address: str, echo_pid: int) -> None:
    pairs, channels = await _players(cluster)
    try:
        await _gateway(cluster, pairs[:2], None)  # warm up (connections, caches, code paths)
        echo = await _echo(echo_address, echo_pid)
        sizes = Sizes()
        analysis_start = _analysis_now(cluster)
        gw = await _gateway(cluster, pairs, sizes=sizes)
        print(_line("echo (c=20)", echo, "call"))
        print(_line("gateway Play (20 tables)", gw, "cmd"))
        print(
            f"   ratio gateway/echo {gw['per_s'] / echo['per_s']:.2f} (goal >= 0.20)   "
            f"CPU per command / per echo call {gw['cpu_ms'] / echo['cpu_ms']:.1f}x   "
            f"Redis round trips per command {gw['round_trips']:.2f} (goal <= 2.5)\n"
            f"   server CPU per command {gw['cpu_ms']:.2f} ms (goal <= 1.5: gateway <= 0.4, "
            "table <= 0.6, the Kafka path <= 0.15)"
        )
        print(f"   CPU ms per command by process: {_shares(gw)}")
        apart = await _gateway(cluster, pairs, combine=False)
        print(_line("  answers apart (old Join)", apart, "cmd"))
        print(
            f"   one message per seat per commit vs the answer apart: CPU per command "
            f"{gw['cpu_ms'] / apart['cpu_ms']:.2f}x, gateway "
            f"{gw['cpu_ms:gateway'] / apart['cpu_ms:gateway']:.2f}x"
        )
        half = await _gateway(cluster, pairs, gw["per_s"] / 2)
        half_echo = await _echo(echo_address, echo_pid, echo["per_s"] / 2)
        print(_line("echo at half its peak", half_echo, "call"))
        print(_line("gateway at half its peak", half, "cmd") + "   (goal p99 < 50 ms)")
        print(f"   CPU ms per command by process at half its peak: {_shares(half)}")
        floor, at_peak, at_half = await _floor(
            *sizes.mean(), rates=(None, gw["per_s"], half["per_s"])
        )
        (together,) = await _floor(*sizes.mean(), local=True)
        print(_line("floor (no rules), its peak", floor, "cmd"))
        print(_line("floor at the cluster's peak", at_peak, "cmd"))
        print(_line("floor at the cluster's half", at_half, "cmd"))
        print(_line("floor, table part in gateway", together, "cmd"))
        print(
            f"   the floor: gateway's part {floor['cpu_ms:front']:.2f} ms, table's part "
            f"{floor['cpu_ms:back']:.2f}, Valkey {floor['cpu_ms:valkey']:.2f} "
            f"(seat update {floor['seat_bytes']:.0f} B), {floor['cpu_ms'] / echo['cpu_ms']:.1f} "
            f"echo calls; with the table's part in the gateway's process: "
            f"{together['cpu_ms']:.2f} ms, {together['cpu_ms'] / floor['cpu_ms']:.2f}x the floor"
        )
        for name, cluster_run, floor_run in (("peak", gw, at_peak), ("half-peak", half, at_half)):
            print(_against_floor(name, cluster_run, floor_run))
        cpu_s, analysed = await _analysis_since(cluster, analysis_start)
        per_match = f"{cpu_s * 1000 / analysed:.0f} ms of CPU per match" if analysed else "n/a"
        print(
            f"   the analysis, apart: {per_match} ({analysed:.0f} matches to 7 finished in the "
            "measured phases and analysed; its CPU from the first of them until its queue emptied)"
        )
    finally:
        for ch in channels:
            await ch.close(None)


def _shares(run: dict[str, float]) -> str:
    return "  ".join(
        f"{k.split(':', 1)[1]} {v:.2f}" for k, v in run.items() if k.startswith("cpu_ms:") and v
    )


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    port = free_port()
    echo = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.echo_server", str(port)], stdout=subprocess.PIPE
    )
    try:
        assert echo.stdout is not None
        echo.stdout.readline()  # "serving"
        env = {"BG_CLOCK_SCALE": "0.2", "BG_RATE_PER_S": "100000", "BG_LOG_LEVEL": "WARNING"}
        with local_cluster(workdir, env) as cluster:
            asyncio.run(_main(cluster, f"127.0.0.1:{port}", echo.pid))
    finally:
        echo.terminate()
        echo.wait(10)


# -- the floor --------------------------------------------------------------------------------


def _server(*argv: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.floor_servers", *argv], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # "serving"
    return proc


async def _floor_seats(
    address: str, table: str, until: float, lat: list[float], pace: Pace | None = None
) -> int:
    """One table's two seats on their own connections; the seats command in turn, each
    command answered when its seat's stream shows the update (the other seat's copy read too)."""
    channels = [grpc.aio.insecure_channel(address, options=OPTIONS) for _ in range(2)]
    queues: list[asyncio.Queue[bytes | None]] = [asyncio.Queue(), asyncio.Queue()]
    command = table.encode() + os.urandom(44)  # a PlayRequest's size
    calls = []
    for ch, q in zip(channels, queues, strict=True):

        async def outgoing(q: asyncio.Queue[bytes | None] = q) -> AsyncIterator[bytes]:
            while (item := await q.get()) is not None:
                yield item

        call = ch.stream_stream("/floor.Front/Play", None, None)(outgoing())
        await q.put(table.encode())  # join
        calls.append(call)
    await asyncio.sleep(0.2)  # both joined before the first command
    done, seat = 0, 0
    try:
        while time.monotonic() < until:
            if pace is not None:
                await pace.wait()
            started = time.perf_counter()
            await queues[seat].put(command)
            await calls[seat].read()
            lat.append(time.perf_counter() - started)
            await calls[1 - seat].read()
            done += 1
            seat = 1 - seat
    finally:
        for q in queues:
            await q.put(None)  # each seat's stream ends once the front has sent what it had
        for call in calls:
            try:
                await asyncio.wait_for(call.code(), 5)
            except TimeoutError:
                call.cancel()  # a front that stopped answering
        for ch in channels:
            await ch.close(None)
    return done


async def _floor(
    seat_bytes: int,
    event_bytes: int,
    local: bool = False,
    rates: tuple[float | None, ...] = (None,),
) -> list[dict[str, float]]:
    """The floor's figures at each of `rates` (None: its own peak), on one set of servers;
    `local`: the commit made in the front's process (no back)."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    valkey = start_valkey(workdir)
    redis_port = valkey.address.rsplit(":", 1)[1].split("/")[0]
    back_port, front_port = free_port(), free_port()
    # The table's update carries both seats' views and the events; the state is a few hundred B.
    update_bytes = 2 * seat_bytes - event_bytes
    servers, pids = [], {"valkey": valkey.process.pid}
    if not local:
        back = _server(
            "back", str(back_port), redis_port, "400", str(event_bytes), str(update_bytes)
        )
        servers.append(back)
        pids["back"] = back.pid
    target = "local" if local else f"127.0.0.1:{back_port}"
    front = _server("front", str(front_port), target, redis_port, str(seat_bytes))
    servers.append(front)
    pids["front"] = front.pid
    try:
        address = f"127.0.0.1:{front_port}"
        warm = time.monotonic() + 2
        await asyncio.gather(*(_floor_seats(address, f"{i:016d}", warm, []) for i in range(2)))
        return [await _floor_run(address, pids, seat_bytes, rate) for rate in rates]
    finally:
        for proc in reversed(servers):  # the front first: it ends its stream to the back
            proc.terminate()
            proc.wait(10)
        valkey.stop()


async def _floor_run(
    address: str, pids: dict[str, int], seat_bytes: int, rate: float | None
) -> dict[str, float]:
    lat: list[float] = []
    pace = Pace(rate)
    cpu = cpu_of(pids)
    started = time.monotonic()
    counts = await asyncio.gather(
        *(_floor_seats(address, f"{i:016d}", started + SECONDS, lat, pace) for i in range(TABLES))
    )
    elapsed = time.monotonic() - started
    used = {k: v - cpu[k] for k, v in cpu_of(pids).items()}
    n = max(1, sum(counts))
    return {
        "per_s": sum(counts) / elapsed,
        "p50_ms": _pct(lat, 0.5) * 1000,
        "p99_ms": _pct(lat, 0.99) * 1000,
        "cpu_ms": sum(used.values()) * 1000 / n,
        "seat_bytes": seat_bytes,
        **{f"cpu_ms:{k}": v * 1000 / n for k, v in used.items()},
    }
