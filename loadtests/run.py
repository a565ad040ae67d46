"""`make load` / `python -m loadtests.run`: a Locust load test of a backgammon cluster, on Locust's
own distributed engine (a master and its workers), with a summary JSON, Locust's HTML report,
and a non-zero exit when a correctness counter is not zero, an error is not a rule's answer, or
the gateway rate-limited the run.

Without --target it starts a local cluster and tests it (as `make load` always did). With
--target HOST:PORT it tests any gateway (--tls, --ca, --server-name), funding its players
through the operators' API at --admin HOST:PORT as --operator, whose key it reads from
BG_LOAD_OPERATOR_KEY (never the command line); everything granted is in the ledger with the
run's id, and the summary says where it ended.

  python -m loadtests.run --users 40 --duration 170 --workers 2
  BG_LOAD_OPERATOR_KEY=... python -m loadtests.run --target gw.example:443 --tls \\
      --admin 10.0.0.5:50057 --operator loadtest --profile human --users 2000 --workers 4
  python -m loadtests.run --target ... --master --expect-workers 8    (workers elsewhere:)
  python -m loadtests.run --worker --master-host 10.0.0.9

A run's files (report.html, stats, failures, summary.json) go to --out (.load-runs/<run id>).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from infra.cluster.embedded import free_port
from infra.cluster.local_cluster import RunningCluster, TreeCpu, cpu_of, local_cluster
from loadtests import capacity
from loadtests.capacity import STEP_S
from loadtests.endpoints import Endpoint
from loadtests.failures import read_failures
from loadtests.operators import (
    OPERATOR_KEY_ENV,
    Refused,
    check_gateway,
    open_tournaments,
    run_id,
    sign_in,
    where_they_ended,
)
from loadtests.settings import STRESS_WEIGHTS
from loadtests.summary import summarize
from services.table.shard_leases import TTL_MS

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
ROOT = Path(__file__).resolve().parents[1]
PREFIX = re.compile(r"[a-z][a-z0-9]{0,5}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m loadtests.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--users", type=int, default=40)
    p.add_argument("--spawn-rate", type=float, default=10)
    p.add_argument("--duration", type=int, default=170, help="seconds of load")
    p.add_argument("--profile", default="stress", choices=("stress", "human", "mix"))
    p.add_argument("--human-share", type=float, default=0.5, help="--profile mix: humans' share")
    p.add_argument(
        "--tournaments",
        type=int,
        default=-1,
        help="casual sit-and-gos opened for the people to join (default: 2 with people on a "
        "local cluster, 0 on a --target; the operator needs the tournament_create right)",
    )
    target = p.add_argument_group("the cluster tested (default: a local one started here)")
    target.add_argument("--target", default="", help="a gateway's gRPC address, HOST:PORT")
    target.add_argument("--tls", action="store_true", help="the target speaks TLS")
    target.add_argument("--ca", default="", help="PEM roots to verify TLS (default: system's)")
    target.add_argument("--server-name", default="", help="the name TLS verifies")
    target.add_argument("--admin", default="", help="the operators' API, HOST:PORT")
    target.add_argument("--admin-tls", action="store_true", help="the operators' API is TLS")
    target.add_argument("--operator", default="admin", help="the operator who funds players")
    target.add_argument("--accounts", default="guest", choices=("guest", "device"))
    target.add_argument("--prefix", default="lt", help="players' names begin so (a-z0-9, 6)")
    target.add_argument("--funds", type=int, default=100_000, help="diamonds granted a player")
    dist = p.add_argument_group("Locust's distribution")
    dist.add_argument("--workers", type=int, default=1, help="local Locust worker processes")
    dist.add_argument("--master", action="store_true", help="a master only: workers elsewhere")
    dist.add_argument("--expect-workers", type=int, default=1, help="with --master")
    dist.add_argument("--master-bind", default="127.0.0.1", help="with --master: its address")
    dist.add_argument("--worker", action="store_true", help="a worker only, of --master-host")
    dist.add_argument("--master-host", default="127.0.0.1")
    dist.add_argument("--master-port", type=int, default=5557, help="--master's, or its workers'")
    dist.add_argument("--web-ui", action="store_true", help="Locust's web UI on --web-port")
    dist.add_argument("--web-port", type=int, default=8089)
    local = p.add_argument_group("a local cluster (no --target)")
    local.add_argument("--clock-scale", default="", help="default 0.05 (human: 1)")
    local.add_argument(
        "--chaos", action="store_true", help="kill -9 a table replica mid-run (it restarts)"
    )
    p.add_argument(
        "--late-bound-ms",
        type=float,
        default=None,
        help="how late a timeout may fire (default 1000 ms; with --chaos 1000 ms more than a "
        "killed table replica's shard lease, which its shards' deadlines wait out)",
    )
    p.add_argument("--max-p99-ms", type=float, default=5000)
    p.add_argument(
        "--prometheus",
        default="",
        help="the cluster's Prometheus (URL): a capacity report from the overview dashboard's "
        "queries; a local cluster runs its own with --capacity",
    )
    p.add_argument("--capacity", action="store_true", help="a local cluster with Prometheus")
    p.add_argument(
        "--hold",
        action="store_true",
        help="after the summary, wait to be stopped (a Kubernetes pod keeps the run's files)",
    )
    p.add_argument("--out", default="", help="the run's files (default .load-runs/<run id>)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.worker:
        return _worker(args)
    if not PREFIX.fullmatch(args.prefix):
        return _refused("--prefix: 1-6 lower-case letters and digits, a letter first")
    if args.target and not args.admin:
        return _refused("--target needs --admin HOST:PORT: the operators' API funds the players")
    args.run_id = run_id()
    out = Path(args.out or Path(".load-runs", args.run_id))
    out.mkdir(parents=True, exist_ok=True)
    if args.target:
        gateway = Endpoint(args.target, args.tls, args.ca, args.server_name)
        admin = Endpoint(args.admin, args.admin_tls, args.ca)
        return _measure(args, out, gateway, admin, os.environ.get(OPERATOR_KEY_ENV, ""), None)
    scale = args.clock_scale or ("1" if args.profile == "human" else "0.05")
    args.clock_scale = scale
    env = {"BG_CLOCK_SCALE": scale, "BG_RATE_PER_S": "1000", "BG_LOG_LEVEL": "WARNING"}
    data = Path(tempfile.mkdtemp(prefix="bg-load-"))
    try:
        with local_cluster(data, env, *(["--prometheus"] if args.capacity else [])) as cluster:
            if args.capacity:
                args.prometheus = next(
                    p["address"] for p in cluster.state["infra"] if p["name"] == "prometheus"
                )
            gateway = Endpoint(cluster.address("gateway"))
            admin = Endpoint(cluster.address("identity"))
            key = cluster.state["operator"]["key"]
            args.operator = cluster.state["operator"]["name"]
            return _measure(args, out, gateway, admin, key, cluster)
    except RuntimeError as exc:  # the cluster did not start: its log says why
        print(exc, file=sys.stderr)
        return 2


def _refused(why: str) -> int:
    print(f"loadtests.run: {why}", file=sys.stderr)
    return 2


def _late_bound_ms(args: argparse.Namespace) -> float:
    if args.late_bound_ms is not None:
        return float(args.late_bound_ms)
    return 1000.0 + (TTL_MS if args.chaos else 0)


def _locust_options(args: argparse.Namespace, gateway: Endpoint, admin: Endpoint) -> list[str]:
    """The run's settings, as options Locust forwards from its master to every worker."""
    return [
        "--host",
        gateway.address,
        "--load-run-id",
        args.run_id,
        "--load-prefix",
        args.prefix,
        "--load-accounts",
        args.accounts,
        "--load-admin",
        admin.address,
        "--load-operator",
        args.operator,
        "--load-funds",
        str(args.funds),
        "--load-profile",
        args.profile,
        "--load-human-share",
        str(args.human_share),
        "--load-late-bound-ms",
        str(_late_bound_ms(args)),
        *(["--load-tls"] if gateway.tls else []),
        *(["--load-admin-tls"] if admin.tls else []),
        *(["--load-ca", gateway.ca] if gateway.ca else []),
        *(["--load-server-name", gateway.server_name] if gateway.server_name else []),
    ]


def _classes(args: argparse.Namespace) -> list[str]:
    if args.profile == "human":
        return ["HumanUser"]
    return [*STRESS_WEIGHTS, *(["HumanUser"] if args.profile == "mix" else [])]


def _measure(
    args: argparse.Namespace,
    out: Path,
    gateway: Endpoint,
    admin: Endpoint,
    key: str,
    cluster: RunningCluster | None,
) -> int:
    """Check the target and the operator, run Locust's master and workers, then summarize."""
    try:
        token = asyncio.run(_checked(gateway, admin, args.operator, key))
    except Refused as exc:
        return _refused(str(exc))
    people = args.profile != "stress"
    count = args.tournaments if args.tournaments >= 0 else (2 if people and not args.target else 0)
    tournaments = asyncio.run(open_tournaments(admin, token, args.run_id, count)) if count else []
    locust = str(Path(sys.executable).parent / "locust")
    env = {**os.environ, OPERATOR_KEY_ENV: key}
    master = [
        locust,
        "-f",
        str(LOCUSTFILE),
        "--master",
        "--master-bind-host",
        args.master_bind,
        "--expect-workers",
        str(args.expect_workers if args.master else args.workers),
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.spawn_rate),
        "--run-time",
        f"{args.duration}s",
        "--stop-timeout",
        "20",
        "--html",
        str(out / "report.html"),
        "--csv",
        str(out / "locust"),
        "--json-file",
        str(out / "stats"),
        "--skip-log",
        "--load-run-dir",
        str(out),
        *_locust_options(args, gateway, admin),
        *_classes(args),
    ]
    port = args.master_port if args.master else free_port()  # local runs side by side
    master += ["--master-bind-port", str(port)]
    if args.web_ui:
        master += ["--autostart", "--autoquit", "30", "--web-port", str(args.web_port)]
    else:
        master += ["--headless"]
    started, began = time.monotonic(), time.time()
    with ExitStack() as stack:
        procs = [subprocess.Popen(master, env=env, cwd=ROOT)]
        stack.callback(_stop, procs)
        if not args.master:
            for _ in range(args.workers):
                worker = [
                    locust,
                    "-f",
                    str(LOCUSTFILE),
                    "--worker",
                    "--master-host",
                    "127.0.0.1",
                    "--master-port",
                    str(port),
                ]
                procs.append(subprocess.Popen(worker, env=env, cwd=ROOT))
        generators = [TreeCpu(p.pid) for p in procs]
        before = cpu_of(cluster.pids) if cluster else {}
        if args.chaos and cluster is not None:
            time.sleep(args.duration / 3)
            victim = next(s for s in cluster.state["services"] if s["instance"] == "table-2")
            os.kill(victim["pid"], signal.SIGKILL)
        while procs[0].poll() is None:  # the generator's processes, sampled as they run
            for g in generators:
                g.sample()
            time.sleep(1.0)
        elapsed = time.monotonic() - started
        after = cpu_of(cluster.pids) if cluster else {}
    stats = json.loads((out / "stats.json").read_text()) if (out / "stats.json").exists() else []
    summary = summarize(stats, read_failures(out / "locust_failures.csv"))
    players = (
        json.loads((out / "players.json").read_text()) if (out / "players.json").exists() else {}
    )
    summary["diamonds"] = asyncio.run(where_they_ended(admin, token, players)) if players else {}
    summary.update(
        {
            "run_id": args.run_id,
            "target": gateway.described(),
            "profile": args.profile,
            "users": args.users,
            "duration_s": args.duration,
            "workers": args.workers,
            "chaos": args.chaos,
            "report": str(out / "report.html"),
            "tournaments": tournaments,
            "commands_per_s": round(summary["commands_total"] / max(1, args.duration), 1),
        }
    )
    generator_s = sum(g.sample() for g in generators)
    summary["cpu"] = _cpu(before, after, generator_s, elapsed, summary["commands_total"])
    if args.prometheus:
        time.sleep(2 * STEP_S)  # the run's last scrapes
        report = capacity.collect(args.prometheus, began, time.time())
        summary["capacity"] = {
            **report["derived"],
            "queries_without_data": report["queries_without_data"],
            "page": str(capacity.write(report, out)),
        }
    summary["failed"] = _verdict(summary, args)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2), flush=True)
    if args.hold:
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    return 1 if summary["failed"] else 0


async def _checked(gateway: Endpoint, admin: Endpoint, operator: str, key: str) -> str:
    await check_gateway(gateway)
    return await sign_in(admin, operator, key)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


def _cpu(
    before: dict[str, float],
    after: dict[str, float],
    generator_s: float,
    elapsed: float,
    commands: int,
) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    cluster_s = sum(max(0.0, after.get(k, 0.0) - before[k]) for k in before)
    return {
        "cluster_s": round(cluster_s, 1),
        "generator_s": round(generator_s, 1),
        "cluster_share": round(cluster_s / (elapsed * cores), 3),
        "generator_share": round(generator_s / (elapsed * cores), 3),
        "cluster_ms_per_command": round(cluster_s * 1000 / max(1, commands), 2),
    }


def _verdict(summary: dict[str, Any], args: argparse.Namespace) -> list[str]:
    broken = [name for name, count in summary["checks"].items() if count]
    refusals = summary["refusals"]
    if refusals["errors"]:
        broken.append(f"errors: {refusals['errors']}")
    if refusals["limited"]:
        broken.append(
            f"the gateway rate-limited the run ({sum(refusals['limited'].values())} refusals: "
            "its limits, not the cluster's capacity, were measured)"
        )
    worst_p99 = max((c["p99_ms"] for c in summary["commands"].values()), default=0.0)
    if worst_p99 > args.max_p99_ms:
        broken.append(f"p99 {worst_p99} ms > {args.max_p99_ms} ms")
    if summary["matches_completed"] == 0:
        broken.append("no match completed")
    return broken


def _worker(args: argparse.Namespace) -> int:
    """A Locust worker of a master elsewhere: its settings come from the master; the
    operator's key from this machine's environment."""
    if not os.environ.get(OPERATOR_KEY_ENV):
        return _refused(f"set {OPERATOR_KEY_ENV}: this worker's players are funded with it")
    locust = str(Path(sys.executable).parent / "locust")
    argv = [
        locust,
        "-f",
        str(LOCUSTFILE),
        "--worker",
        "--master-host",
        args.master_host,
        "--master-port",
        str(args.master_port),
    ]
    return subprocess.call(argv, cwd=ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
