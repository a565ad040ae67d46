"""`bgcluster fault`: an operator's drill on the running cluster (infra/cluster/faults.py):
cut the network between its hosts (a cluster started with `--hosts`), heal it, and pause, kill
or skew the clock of one process. Each prints what it did; `heal` undoes every network fault."""

from __future__ import annotations

import argparse
import json
from typing import Any

from infra.cluster.faults import Faults, NotOnHosts
from infra.cluster.hosts import NeedsRoot
from infra.cluster.status import NoCluster, UnknownProcess


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    fault = sub.add_parser("fault", parents=[common], help="drills: network faults, pause, skew")
    acts = fault.add_subparsers(dest="action", required=True)
    acts.add_parser("hosts", help="the hosts and their addresses (JSON)")
    p = acts.add_parser("isolate", help="cut a host off from every other and from this machine")
    p.add_argument("host", help="a host's name, as `bgcluster fault hosts` lists it")
    p = acts.add_parser(
        "partition", help="hosts reach their own group only: partition a,b c,d (others untouched)"
    )
    p.add_argument(
        "groups", nargs="+", metavar="HOST,HOST", help="each group: its hosts, comma-separated"
    )
    p = acts.add_parser("drop", help="lose the packets from SOURCE to DESTINATION (one way)")
    p.add_argument("source", help="the host whose packets are lost")
    p.add_argument("destination", help="the host they no longer reach")
    acts.add_parser("heal", help="remove every network fault")
    p = acts.add_parser("flap", help="isolate a host and heal it, TIMES times, PERIOD s each")
    p.add_argument("host", help="the host whose link flaps")
    p.add_argument("--times", type=int, default=5, help="how many cuts (1..100)")
    p.add_argument(
        "--period", type=float, default=2.0, help="seconds of each cut and heal (0.2..60)"
    )
    for name, help_text in (
        ("pause", "SIGSTOP a process (a stalled machine)"),
        ("resume", "SIGCONT a paused process"),
        ("kill", "kill -9 a process (the runner starts it again)"),
    ):
        acts.add_parser(name, help=help_text).add_argument(
            "name", help="a process's name, as `bgcluster status` lists it"
        )
    p = acts.add_parser("skew", help="restart a process with its wall clock MS off (0: true)")
    p.add_argument("name", help="a process's name, as `bgcluster status` lists it")
    p.add_argument("ms", type=int, help="milliseconds its clock is off (negative: slow)")


async def run(args: argparse.Namespace) -> int:
    faults = Faults(args.data_dir)
    try:
        return await _act(faults, args)
    except NoCluster as exc:
        print(f"bgcluster: {exc}")
        return 3
    except (NotOnHosts, NeedsRoot, UnknownProcess, ValueError, TimeoutError) as exc:
        print(f"bgcluster: {exc}")
        return 2


async def _act(faults: Faults, args: argparse.Namespace) -> int:
    action = args.action
    if action == "hosts":
        print(json.dumps(faults.network().hosts, indent=2))
    elif action == "isolate":
        faults.isolate(args.host)
        print(f"{args.host} isolated; `bgcluster fault heal` undoes it")
    elif action == "partition":
        groups = [g.split(",") for g in args.groups]
        faults.partition(*groups)
        print("partitioned: " + " | ".join(",".join(g) for g in groups))
    elif action == "drop":
        faults.drop(args.source, args.destination)
        print(f"packets from {args.source} to {args.destination} dropped (one way)")
    elif action == "heal":
        faults.heal()
        print("healed: every network fault removed")
    elif action == "flap":
        if not 1 <= args.times <= 100 or not 0.2 <= args.period <= 60:
            raise ValueError("flap: --times 1..100, --period 0.2..60 s")
        await faults.flap(args.host, args.times, args.period)
        print(f"{args.host} flapped {args.times} times; healed")
    elif action in ("pause", "resume"):
        getattr(faults, action)(args.name)
        print(f"{args.name} {action}d")
    elif action == "kill":
        print(f"{args.name} killed (pid {faults.kill(args.name)}); the runner starts it again")
    elif action == "skew":
        row = await faults.skew(args.name, args.ms)
        print(f"{args.name} restarted with its clock {args.ms:+d} ms off: pid {row['pid']}")
    return 0
