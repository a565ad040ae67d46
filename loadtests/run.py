"""`make load` / `python -m loadtests.run`: start a local cluster, run headless Locust against
its gateway, print a summary JSON, and exit non-zero when a correctness counter is not zero or a
threshold is broken.

Options: --users, --spawn-rate, --duration (s), --processes (Locust worker processes),
--clock-scale (the cluster's BG_CLOCK_SCALE), --chaos (kill -9 one table replica mid-run;
the cluster's supervision restarts it), --late-bound-ms, --max-p99-ms (the command latency
threshold).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from infra.cluster.local_cluster import RunningCluster, TreeCpu, cpu_of, local_cluster
from services.table.shard_leases import TTL_MS

CHECKS = ("disagreement", "legal_refused", "illegal_accepted", "missed_timeout", "doubled_timeout",
          "early_timeout", "late_beyond_bound")  # fmt: skip


def _percentile(histogram: dict[str, int], q: float) -> float:
    """A percentile from Locust's response-time histogram (rounded buckets -> counts)."""
    items = sorted((float(k), v) for k, v in histogram.items())
    total = sum(v for _, v in items)
    if not total:
        return 0.0
    seen = 0
    for value, count in items:
        seen += count
        if seen >= q * total:
            return value
    return items[-1][0]


def summarize(stats: list[dict[str, Any]]) -> dict[str, Any]:
    by = {(s["method"], s["name"]): s for s in stats}
    out: dict[str, Any] = {"checks": {}, "commands": {}, "clock_lateness_ms": {}, "errors": 0}
    for name in CHECKS:
        s = by.get(("check", name))
        out["checks"][name] = s["num_failures"] if s else 0
    completed = by.get(("check", "match_completed"))
    out["matches_completed"] = completed["num_requests"] if completed else 0
    waits = by.get(("check", "w1_refused"))  # quick matches the rules refused for now (W-1)
    out["w1_waits"] = waits["num_requests"] if waits else 0
    commands = 0
    lateness: dict[str, int] = {}
    by_clock: dict[str, int] = {}
    for (method, name), s in by.items():
        if method == "cmd" and not name.startswith("junk_"):
            commands += s["num_requests"]
            out["commands"][name] = {
                "count": s["num_requests"],
                "p50_ms": _percentile(s["response_times"], 0.5),
                "p99_ms": _percentile(s["response_times"], 0.99),
                "failures": s["num_failures"],
            }
            out["errors"] += s["num_failures"]
        elif method == "grpc":
            out["errors"] += s["num_failures"]
        elif method == "clock":
            for k, v in s["response_times"].items():
                lateness[k] = lateness.get(k, 0) + v
            by_clock[name.removeprefix("lateness:")] = s["num_requests"]
    out["commands_total"] = commands
    if lateness:
        out["clock_lateness_ms"] = {
            "count": sum(lateness.values()),
            "p50": _percentile(lateness, 0.5),
            "p99": _percentile(lateness, 0.99),
            "max": max(float(k) for k in lateness),
            "by_clock": by_clock,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m loadtests.run", description=__doc__)
    p.add_argument("--users", type=int, default=40)
    p.add_argument("--spawn-rate", type=float, default=10)
    p.add_argument("--duration", type=int, default=170, help="seconds of load")
    p.add_argument("--processes", type=int, default=1, help="Locust worker processes")
    p.add_argument("--clock-scale", default="0.05")
    p.add_argument(
        "--chaos",
        action="store_true",
        help="kill -9 a table replica mid-run (supervision restarts it)",
    )
    p.add_argument(
        "--late-bound-ms",
        type=float,
        default=None,
        help="how late a timeout may fire (default 1000 ms; with --chaos 1000 ms more than a "
        "killed table replica's shard lease, which its shards' deadlines wait out)",
    )
    p.add_argument("--max-p99-ms", type=float, default=5000)
    args = p.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="bg-load-"))
    env = {"BG_CLOCK_SCALE": args.clock_scale, "BG_RATE_PER_S": "1000", "BG_LOG_LEVEL": "WARNING"}
    try:
        with local_cluster(data, env) as cluster:
            return _measure(args, data, cluster)
    except RuntimeError as exc:  # the cluster did not start: its log says why
        print(exc, file=sys.stderr)
        return 2


def _late_bound_ms(args: argparse.Namespace) -> float:
    if args.late_bound_ms is not None:
        return float(args.late_bound_ms)
    return 1000.0 + (TTL_MS if args.chaos else 0)


def _measure(args: argparse.Namespace, data: Path, cluster: RunningCluster) -> int:
    """Run Locust against the running cluster (killing a table replica for --chaos)."""
    bin_dir = Path(sys.executable).parent
    state = cluster.state
    locust_env = {
        **os.environ, "LOAD_WALLET_ADDR": cluster.address("wallet"),
        "LOAD_OPERATOR_TOKEN": state["operator_token"],
        "LOAD_LATE_BOUND_MS": str(_late_bound_ms(args)),
    }  # fmt: skip
    stats_file = data / "stats.json"
    locust_cmd = [
        str(bin_dir / "locust"), "-f", str(Path(__file__).with_name("locustfile.py")),
        "--headless", "--users", str(args.users), "--spawn-rate", str(args.spawn_rate),
        "--run-time", f"{args.duration}s", "--host", cluster.address("gateway"),
        "--json-file", str(stats_file.with_suffix("")), "--skip-log", "--stop-timeout", "20",
    ]  # fmt: skip
    if args.processes > 1:
        locust_cmd += ["--processes", str(args.processes)]
    cluster_pids = cluster.pids
    cpu_before = cpu_of(cluster_pids)
    started = time.monotonic()
    locust = subprocess.Popen(locust_cmd, env=locust_env, cwd=Path(__file__).parent.parent)
    generator = TreeCpu(locust.pid)
    generator_s = 0.0
    try:
        if args.chaos:  # the runner's supervisor starts it again (infra/cluster/supervision.py)
            time.sleep(args.duration / 3)
            victim = next(s for s in state["services"] if s["instance"] == "table-2")
            os.kill(victim["pid"], signal.SIGKILL)
        while locust.poll() is None:  # Locust and its worker processes, sampled as they run
            generator_s = generator.sample()
            time.sleep(1.0)
        elapsed = time.monotonic() - started
        cpu_after = cpu_of(cluster_pids)
        cluster_s = sum(max(0.0, cpu_after[k] - cpu_before[k]) for k in cpu_before)
        stats = json.loads(stats_file.read_text()) if stats_file.exists() else []
    finally:
        if locust.poll() is None:
            locust.terminate()
            locust.wait(30)
    summary = summarize(stats)
    summary.update({"users": args.users, "duration_s": args.duration, "processes": args.processes,
                    "clock_scale": float(args.clock_scale), "chaos": args.chaos})  # fmt: skip
    summary["commands_per_s"] = round(summary["commands_total"] / max(1, args.duration), 1)
    cores = os.cpu_count() or 1
    summary["cpu"] = {
        "cluster_s": round(cluster_s, 1),
        "generator_s": round(generator_s, 1),
        "cluster_share": round(cluster_s / (elapsed * cores), 3),
        "generator_share": round(generator_s / (elapsed * cores), 3),
        "cluster_ms_per_command": round(cluster_s * 1000 / max(1, summary["commands_total"]), 2),
    }
    broken = [name for name, count in summary["checks"].items() if count]
    worst_p99 = max((c["p99_ms"] for c in summary["commands"].values()), default=0.0)
    if worst_p99 > args.max_p99_ms:
        broken.append(f"p99 {worst_p99} ms > {args.max_p99_ms} ms")
    if summary["matches_completed"] == 0:
        broken.append("no match completed")
    summary["failed"] = broken
    print(json.dumps(summary, indent=2))
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
