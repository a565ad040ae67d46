"""Computer seats one bots process serves, measured end to end on a whole local cluster.

`bgcluster up` (real clocks), then N people each at a table against the computer at a level
(casual, match to 5), playing through the gateway with THINK_S of thought before each command,
for SECONDS. What a person waits for the computer is measured where a person sees it: from the
pushed update that hands the computer the decision to the update showing its answer (the bot's
view arriving, its decision, its command through the gateway, the table's commit, the fan-out).
Reported per level and N: the computer's commands per second (a roll, a play, a cube answer:
each a decision of the bot's), that wait's p50 / p99, the bots process's CPU (share of a core,
and per command, from /proc) and the whole cluster's. Then the seats one bots process serves
with the p99 under 1 s at a person's pace (a command per seat every SEAT_PACE_S): the largest
measured load that kept it, and what the bots' own CPU per command allows on 70% of a core (the
rest of the cluster shares these 2 cores here).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from pathlib import Path

import grpc

from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2
from bg.table.v1 import table_pb2
from client.player import Player
from infra.cluster.local_cluster import RunningCluster, cpu_of, local_cluster
from services.contracts.vocabulary import FINISHED

SECONDS = float(os.environ.get("BG_BENCH_SECONDS", "20"))
THINK_S = 0.5  # a quick person; real ones take seconds (SEAT_PACE_S)
SEAT_PACE_S = 6.0  # a computer seat sends about a command per 6 s in a live match
LOADS = {"expert": (10, 30, 60), "normal": (10, 30, 60)}
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
IDLE = (events_pb2.PHASE_BETWEEN_GAMES, *FINISHED)  # the clock's to move on, not the computer's


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


class Waits:
    """The computer's decisions as one person's stream shows them: each update while the
    computer decides ends the wait that began with the update before it."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._since: float | None = None

    def update(self, u: gateway_pb2.SeatUpdate) -> None:
        now = time.perf_counter()
        v = u.view
        if self._since is not None:
            self.samples.append(now - self._since)
        computer_decides = v.decider != v.seat and v.phase not in IDLE
        self._since = now if computer_decides else None


async def _person(player: Player, level: str, until: float, waits: Waits) -> None:
    options = table_pb2.TableOptions(profile="casual", level=level, match_length=5)
    table = await player.create_table(options)
    session = player.session_for(table.table_id)
    session.on_update = waits.update
    async with session:
        with contextlib.suppress(TimeoutError):
            await session.play_out(player.decide, until - time.monotonic(), THINK_S)
        leave = table_pb2.Command()
        leave.leave.SetInParent()
        with contextlib.suppress(Exception):
            await session.send(leave, timeout_s=10)


async def _load(cluster: RunningCluster, level: str, n: int) -> dict[str, float]:
    channels = [
        grpc.aio.insecure_channel(cluster.address("gateway"), options=OPTIONS) for _ in range(n)
    ]
    try:
        people = [Player(ch, f"seat-{level}-{n}-{i}", seed=i) for i, ch in enumerate(channels)]
        for p in people:
            await p.login()
        waits = [Waits() for _ in people]
        before = cpu_of(cluster.pids)
        started = time.monotonic()
        until = started + SECONDS
        await asyncio.gather(
            *(_person(p, level, until, w) for p, w in zip(people, waits, strict=True)),
            return_exceptions=True,
        )
        elapsed = time.monotonic() - started
        used = {k: v - before[k] for k, v in cpu_of(cluster.pids).items()}
    finally:
        for ch in channels:
            await ch.close(None)
    samples = [s for w in waits for s in w.samples]
    bots = next(v for k, v in used.items() if k.startswith("bots"))
    return {
        "decisions_per_s": len(samples) / elapsed,
        "p50_ms": _pct(samples, 0.5) * 1000,
        "p99_ms": _pct(samples, 0.99) * 1000,
        "bots_core": bots / elapsed,
        "bots_ms": bots * 1000 / max(1, len(samples)),
        "cluster_cores": sum(used.values()) / elapsed,
    }


async def _main(cluster: RunningCluster) -> None:
    for level, loads in LOADS.items():
        kept = 0.0
        per_decision: list[float] = []
        for n in loads:
            r = await _load(cluster, level, n)
            per_decision.append(r["bots_ms"])
            if r["p99_ms"] < 1000:
                kept = max(kept, r["decisions_per_s"])
            print(
                f"   {level:<7} {n:3d} tables: {r['decisions_per_s']:6.1f} computer commands/s, "
                f"wait p50 {r['p50_ms']:6.1f} ms p99 {r['p99_ms']:7.1f} ms; bots "
                f"{r['bots_core']:4.0%} of a core, {r['bots_ms']:5.2f} ms CPU per command; "
                f"cluster {r['cluster_cores']:.2f} cores",
                flush=True,
            )
        cpu_ms = min(per_decision)
        print(
            f"   {level}: p99 < 1 s held up to {kept:.1f} commands/s measured = "
            f"{kept * SEAT_PACE_S:.0f} seats at one command per {SEAT_PACE_S:.0f} s (the whole "
            f"cluster on this box); the bots' own {cpu_ms:.2f} ms per command on 70% of a core: "
            f"{0.7 * 1000 / cpu_ms * SEAT_PACE_S:.0f} seats per bots process",
            flush=True,
        )


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-bots-seats-"))
    env = {"BG_RATE_PER_S": "100000", "BG_LOG_LEVEL": "WARNING", "BG_NICE": "19"}
    with local_cluster(workdir, env) as cluster:
        asyncio.run(_main(cluster))
