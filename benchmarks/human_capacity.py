"""`make capacity` / `python -m benchmarks.human_capacity`: how many tables played at a person's
pace this machine's cluster holds (issue 59, item 6), with the analysis on and off.

For each count of tables, a fresh local cluster with Prometheus (real clocks) and the load test's
human profile (two people a table, loadtests/human.py) through it, by address, from Locust's
master and two workers; after the ramp and a minute of settling, every 10 s window of the
steady period is judged from the cluster's Prometheus: the gateway's Play command p99 under
200 ms and the clocks' lateness p99 under 100 ms. The analysis is "off" when its process is
paused (SIGSTOP) for the run: it judges finished matches off the event log, so nothing waits on
it. Per step: CPU by service per 1,000 tables (the overview dashboard's own queries, over the
steady period), the generator's CPU apart, and the analysis's share as a ratio to the command
path's (every other service). Prints a table and writes .human-capacity.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from infra.cluster.faults import Faults
from infra.cluster.local_cluster import local_cluster
from loadtests import capacity
from loadtests.operators import OPERATOR_KEY_ENV

P99_MS, LATENESS_MS = 200.0, 100.0
WINDOW = "10s"
P99 = "histogram_quantile(0.99, sum by (le) (rate({}_bucket[" + WINDOW + "])))"
COMMANDS_P99 = P99.format("bg_gateway_command_seconds")
LATENESS_P99 = P99.format("bg_table_clock_lateness_seconds")
SETTLE_S = 60
SPAWN_RATE = 20


def _windows(prometheus: str, expr: str, start: float, end: float) -> list[float]:
    """The query's value in each 10 s window (ms), NaN ones left out (a window with no event)."""
    found = capacity.query_range(prometheus, expr, start, end)
    values = [v for s in found for _, v in s["values"]]
    return [1000 * v for v in values if math.isfinite(v)]


def step(tables: int, analysis: bool, steady_s: int, out: Path) -> dict[str, Any]:
    """One count of tables on a fresh cluster: the windows' verdict and the costs."""
    users = 2 * tables
    ramp = users / SPAWN_RATE + SETTLE_S
    data = Path(tempfile.mkdtemp(prefix="bg-capacity-"))
    env = {"BG_LOG_LEVEL": "WARNING", "BG_RATE_PER_S": "1000"}
    with local_cluster(data, env, "--prometheus", timeout_s=120) as cluster:
        prometheus = next(p["address"] for p in cluster.state["infra"] if p["name"] == "prometheus")
        if not analysis:
            Faults(data).pause("analysis")
        run_out = out / f"{tables}-{'on' if analysis else 'off'}"
        argv = [
            sys.executable,
            "-m",
            "loadtests.run",
            "--target",
            cluster.address("gateway"),
            "--admin",
            cluster.address("identity"),
            "--operator",
            cluster.state["operator"]["name"],
            "--profile",
            "human",
            "--users",
            str(users),
            "--spawn-rate",
            str(SPAWN_RATE),
            "--duration",
            str(int(ramp + steady_s)),
            "--workers",
            "2",
            "--out",
            str(run_out),
            "--max-p99-ms",
            "100000",
        ]
        started = time.time()
        key = {OPERATOR_KEY_ENV: cluster.state["operator"]["key"]}
        done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **key})
        steady_start, steady_end = started + ramp, started + ramp + steady_s
        time.sleep(2 * capacity.STEP_S)
        commands = _windows(prometheus, COMMANDS_P99, steady_start, steady_end)
        lateness = _windows(prometheus, LATENESS_P99, steady_start, steady_end)
        report = capacity.collect(prometheus, steady_start, steady_end)
        if not analysis:
            Faults(data).resume("analysis")
    summary = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    derived = report["derived"]
    cpu = derived["cpu_cores"]
    path = sum(v for k, v in cpu.items() if k != "analysis")
    return {
        "tables": tables,
        "analysis": "on" if analysis else "off",
        "live_tables": derived["live_tables"],
        "commands_per_s": derived["commands_per_s"],
        "windows": len(commands),
        "worst_command_p99_ms": round(max(commands, default=0.0), 1),
        "worst_lateness_p99_ms": round(max(lateness, default=0.0), 1),
        "holds": bool(commands)
        and max(commands) < P99_MS
        and max(lateness, default=0.0) < LATENESS_MS,
        "cpu_cores": cpu,
        "cpu_cores_per_1000_tables": derived["cpu_cores_per_1000_tables"],
        "memory_mb_per_1000_tables": derived["memory_mb_per_1000_tables"],
        "analysis_to_command_path": round(cpu.get("analysis", 0.0) / path, 2) if path else 0.0,
        "generator_cpu_share": summary.get("cpu", {}).get("generator_share"),
        "checks_failed": [k for k, v in summary.get("checks", {}).items() if v],
        "errors": summary.get("refusals", {}).get("errors", {}),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.human_capacity", description=__doc__)
    p.add_argument("--tables", default="250,500,750,1000", help="counts to try, ascending")
    p.add_argument("--steady", type=int, default=180, help="seconds judged at each count")
    p.add_argument("--analysis", default="on,off")
    p.add_argument("--json", default=".human-capacity.json")
    args = p.parse_args(argv)
    out = Path(tempfile.mkdtemp(prefix="bg-capacity-runs-"))
    results = []
    for analysis in (a == "on" for a in args.analysis.split(",")):
        for tables in (int(t) for t in args.tables.split(",")):
            found = step(tables, analysis, args.steady, out)
            results.append(found)
            print(json.dumps(found), flush=True)
            Path(args.json).write_text(json.dumps(results, indent=1))  # each step kept as it ends
            if not found["holds"]:
                break  # the next count would not hold either
    print(
        f"\n{'analysis':9}{'tables':>7}{'live':>7}{'cmd/s':>7}{'p99 ms':>8}{'late ms':>8}"
        f"{'holds':>6}  cores a 1,000 tables (analysis / the rest)"
    )
    for r in results:
        per = r["cpu_cores_per_1000_tables"]
        rest = sum(v for k, v in per.items() if k != "analysis")
        print(
            f"{r['analysis']:9}{r['tables']:>7}{r['live_tables']:>7.0f}{r['commands_per_s']:>7.0f}"
            f"{r['worst_command_p99_ms']:>8.0f}{r['worst_lateness_p99_ms']:>8.0f}"
            f"{'yes' if r['holds'] else 'no':>6}  {per.get('analysis', 0):.2f} / {rest:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
