"""Two checkouts' command paths side by side on one machine: a local cluster of each, started
together, measured in alternating windows (A B, B A, ...) so both see the same machine.

The box's speed drifts by 40% within minutes (another tenant, its frequency): two
`python -m benchmarks gateway` runs one after the other once put a change 30% dearer and,
run again, 10% cheaper. Here each round's B/A ratio is taken within the round and the median
of the rounds is reported, beside the medians of each side's CPU per applied command (the
analysis apart), the gateway's, the table replicas', Valkey's, and the latency.

    python -m benchmarks.command_path_ab /path/to/checkout-a /path/to/checkout-b

Each path is a checkout with its generated protos (`make protos` there, or a copy of bg/);
its services run from it (PYTHONPATH), the harness from this one. Env: `AB_ROUNDS` (8),
`AB_WINDOW_S` (5 s a window). Issue 62, item 2's figures came from it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from benchmarks import bench_gateway
from infra.cluster.local_cluster import RunningCluster, local_cluster

ROUNDS = int(os.environ.get("AB_ROUNDS", "8"))
LOADS = (("1 table", 1, None), ("20 tables at 300/s", 20, 300.0), ("20 tables, peak", 20, None))
Run = dict[str, float]


def _whole(r: Run) -> float:
    return r["cpu_ms"] - r.get("cpu_ms:analysis", 0.0)


def _table(r: Run) -> float:
    return r.get("cpu_ms:table-1", 0.0) + r.get("cpu_ms:table-2", 0.0)


def _line(label: str, name: str, runs: list[Run]) -> str:
    def med(key: Callable[[Run], float]) -> float:
        return statistics.median(key(r) for r in runs)

    return (
        f"   {label:<19} {name}: {med(lambda r: r['per_s']):5.0f} cmd/s  whole "
        f"{med(_whole):.2f}  gateway {med(lambda r: r['cpu_ms:gateway']):.2f}  table "
        f"{med(_table):.2f}  valkey {med(lambda r: r['cpu_ms:valkey']):.2f} ms/cmd  p50 "
        f"{med(lambda r: r['p50_ms']):.2f} ms  p99 {med(lambda r: r['p99_ms']):.1f} ms"
    )


async def _measure(clusters: dict[str, RunningCluster]) -> None:
    players = {}
    for name, cluster in clusters.items():
        pairs, _ = await bench_gateway._players(cluster)
        players[name] = pairs
        await bench_gateway._gateway(cluster, pairs[:2], None)  # warm up
    names = list(clusters)
    for label, tables, rate in LOADS:
        got: dict[str, list[Run]] = {name: [] for name in names}
        for i in range(ROUNDS):
            for name in names if i % 2 == 0 else names[::-1]:
                run = await bench_gateway._gateway(clusters[name], players[name][:tables], rate)
                got[name].append(run)
        for name in names:
            print(_line(label, name, got[name]), flush=True)
        ratios = [_whole(b) / _whole(a) for a, b in zip(got["A"], got["B"], strict=True)]
        each = " ".join(f"{r:.2f}" for r in ratios)
        print(f"   {label:<19} B/A whole, by round: {each}; median {statistics.median(ratios):.3f}")


def main(a: str, b: str) -> None:
    bench_gateway.SECONDS = float(os.environ.get("AB_WINDOW_S", "5"))
    env = {"BG_CLOCK_SCALE": "0.2", "BG_RATE_PER_S": "100000", "BG_LOG_LEVEL": "WARNING"}
    with ExitStack() as stack:
        clusters = {}
        for name, checkout in (("A", a), ("B", b)):
            data = Path(tempfile.mkdtemp(prefix=f"ab-{name}-"))
            cluster_env = {**env, "PYTHONPATH": str(Path(checkout).resolve())}
            # Started from its data folder: `python -m` puts its start folder before PYTHONPATH,
            # so started from a checkout, a cluster would run that checkout's services.
            os.chdir(data)
            clusters[name] = stack.enter_context(local_cluster(data, cluster_env))
        print(f"== A {a}\n== B {b}\n   {ROUNDS} rounds of {bench_gateway.SECONDS:.0f} s windows")
        asyncio.run(_measure(clusters))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m benchmarks.command_path_ab CHECKOUT_A CHECKOUT_B")
    main(sys.argv[1], sys.argv[2])
