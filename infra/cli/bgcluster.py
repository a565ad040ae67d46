"""The `bgcluster` command: `up` runs the local cluster, `status` reports its health, `restart`
restarts one of its processes."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import sys
from pathlib import Path

from engine.profiles import CPU_LEVELS
from infra.cli import admin as admin_cli
from infra.cli import fault as fault_cli
from infra.cluster.hosts import check_prefix_and_net
from infra.cluster.runner import SERVICES, Cluster, ClusterConfig, StartupError
from infra.cluster.status import (
    NoCluster,
    UnknownProcess,
    collect,
    healthy,
    read_state,
    render,
    restart,
)
from infra.cluster.valkey_cluster import NODE_TIMEOUT_MS
from services.common.topics import NAMESPACE_PATTERN


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir", type=Path, default=Path(".data"), help="cluster state and SQLite files"
    )
    p = argparse.ArgumentParser(prog="bgcluster", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "up", parents=[common], help="run the whole cluster in the foreground (Ctrl-C stops it)"
    )
    up.add_argument(
        "--base-port",
        type=int,
        default=50050,
        help="gateway at N+1, matchmaking N+2, wallet N+3, leaderboard N+4, "
        "tables N+10.., more instances N+200.., metrics +1000; Valkey N-40 (a cluster's nodes "
        "N+60..), Kafka N-41; 0 = free ports",
    )
    up.add_argument(
        "--replicas",
        action="append",
        default=[],
        metavar="SERVICE=N",
        help="run N instances of a service (repeatable): --replicas table=3 --replicas "
        "gateway=2 --replicas wallet=2; one of each by default, two table replicas; Kafka "
        "consumers share their topics' partitions in one group",
    )
    up.add_argument(
        "--valkey-cluster",
        type=int,
        default=0,
        metavar="PRIMARIES",
        help="run a Valkey Cluster of this many primaries, each with a replica, "
        "instead of one Valkey",
    )
    up.add_argument(
        "--valkey-node-timeout-ms",
        type=int,
        default=NODE_TIMEOUT_MS,
        metavar="MS",
        help="with --valkey-cluster: a primary silent this long is failed over to its replica "
        "(shorter fails over sooner; a node starved of CPU that long is failed over too)",
    )
    up.add_argument("--redis-url", help="use this Redis/Valkey instead of the embedded Valkey")
    up.add_argument("--kafka-bootstrap", help="use this Kafka instead of the embedded Tansu")
    up.add_argument(
        "--kafka-namespace",
        default="",
        help="prefix of this cluster's topics and consumer groups on a shared Kafka "
        "(NS.table-events, group NS.wallet)",
    )
    up.add_argument(
        "--kafka-log",
        choices=("embedded", "kafka"),
        default="embedded",
        help="embedded (a Tansu that may forget: topics in generations, history bounded, the "
        "outboxes replayed; the default) or kafka (a durable Kafka: one topic each, created "
        "here; services/common/embedded_generations.py)",
    )
    up.add_argument(
        "--kafka-storage",
        choices=("memory", "s3"),
        default="memory",
        help="the embedded Tansu's store: memory (the default) or SeaweedFS's S3 (durable too, "
        "at ~2 ms of CPU per event)",
    )
    up.add_argument(
        "--database-url",
        help="SQLAlchemy async URL for wallet and leaderboard "
        "(default: SQLite files in the data directory)",
    )
    up.add_argument(
        "--postgres",
        action="store_true",
        help="an embedded PostgreSQL for wallet and leaderboard instead of SQLite files "
        "(implied by --replicas wallet=N or leaderboard=N above 1)",
    )
    up.add_argument(
        "--starter-grant",
        type=int,
        default=1000,
        help="diamonds each new account is given once (a demo amount; production: 0)",
    )
    up.add_argument(
        "--hosts",
        action="store_true",
        help="every process on its own test host (a network namespace with its own address on "
        "a private bridge, as on separate machines; needs root): `bgcluster fault` then cuts "
        "the network between them",
    )
    up.add_argument(
        "--hosts-prefix",
        default="bgh",
        metavar="PREFIX",
        help="with --hosts: the hosts' names (PREFIX-<process>) and bridge (PREFIXbr); 2-8 "
        "lower-case letters and digits, a letter first and last. A prefix or net a running "
        "cluster holds is refused: give each drill its own",
    )
    up.add_argument(
        "--hosts-net",
        type=int,
        default=213,
        metavar="N",
        help="with --hosts: the hosts' addresses, 10.N.0.x (1..254)",
    )
    up.add_argument(
        "--startup-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for every service to report SERVING before giving up",
    )
    up.add_argument(
        "--prometheus",
        action="store_true",
        help="also run Debian's prometheus (apt install prometheus) with the alert rules",
    )
    st = sub.add_parser(
        "status", parents=[common], help="health of every service of the running cluster"
    )
    st.add_argument("--json", action="store_true", help="a JSON list: name, address, status, ...")
    rs = sub.add_parser(
        "restart", parents=[common], help="restart one process (e.g. table-1, wallet, valkey)"
    )
    rs.add_argument("name", help="an instance name as `bgcluster status` lists it")
    demo = sub.add_parser(
        "demo", parents=[common], help="two scripted guests play a wagered match to 3 (bet 500)"
    )
    demo.add_argument("--json", action="store_true", help="one JSON object with the result")
    play = sub.add_parser(
        "play", parents=[common], help="play in this terminal through the gateway"
    )
    play.add_argument("--name", default="player", help="your guest name")
    play.add_argument("--vs-cpu", choices=list(CPU_LEVELS), default="", help="play the computer")
    play.add_argument(
        "--create",
        choices=["wagered", "scored", "casual"],
        default="",
        help="open a table of this profile and share its code",
    )
    play.add_argument("--join", default="", help="join a table by party code or invite link")
    play.add_argument("--bet", type=int, default=100, help="wagered: the bet")
    play.add_argument(
        "--tournament",
        default="",
        metavar="TOURNAMENT_ID",
        help="register and play each match the bracket seats you at; 'list' lists them",
    )
    play.add_argument(
        "--watch",
        default="",
        metavar="TABLE_ID",
        help="watch a table anyone may watch (I-35); 'list' lists the matches in play",
    )
    play.add_argument(
        "--gateway", default="", help="gateway address (default: the running cluster)"
    )
    fault_cli.add_parser(sub, common)
    admin_cli.add_parser(sub, common)
    return p


def parse_replicas(items: list[str]) -> dict[str, int]:
    """`--replicas SERVICE=N ...` as {service: N}, the one way to ask for replicas."""
    replicas: dict[str, int] = {}
    for item in items:
        service, _, count = item.partition("=")
        if service not in SERVICES or not count.isdigit() or not 1 <= int(count) <= 9:
            raise ValueError(
                f"--replicas {item}: SERVICE=1..9, SERVICE one of {', '.join(SERVICES)}"
            )
        replicas[service] = int(count)
    return replicas


async def _up(args: argparse.Namespace) -> int:
    if not 0 <= args.valkey_cluster <= 9:
        print("bgcluster: --valkey-cluster must be 0..9", file=sys.stderr)
        return 2
    try:
        replicas = parse_replicas(args.replicas)
    except ValueError as exc:
        print(f"bgcluster: {exc}", file=sys.stderr)
        return 2
    if not re.fullmatch(NAMESPACE_PATTERN, args.kafka_namespace):
        print(f"bgcluster: --kafka-namespace must match {NAMESPACE_PATTERN}", file=sys.stderr)
        return 2
    if not 100 <= args.valkey_node_timeout_ms <= 60_000:
        print("bgcluster: --valkey-node-timeout-ms must be 100..60000", file=sys.stderr)
        return 2
    if args.valkey_cluster and args.redis_url:
        print("bgcluster: --valkey-cluster and --redis-url exclude each other", file=sys.stderr)
        return 2
    try:
        check_prefix_and_net(args.hosts_prefix, args.hosts_net)
    except ValueError as exc:
        print(f"bgcluster: {exc}", file=sys.stderr)
        return 2
    cluster = Cluster(
        ClusterConfig(
            data_dir=args.data_dir,
            base_port=args.base_port,
            valkey_cluster=args.valkey_cluster,
            valkey_node_timeout_ms=args.valkey_node_timeout_ms,
            replicas=replicas,
            redis_url=args.redis_url,
            kafka_bootstrap=args.kafka_bootstrap,
            kafka_namespace=args.kafka_namespace,
            kafka_log=args.kafka_log,
            kafka_storage=args.kafka_storage,
            database_url=args.database_url,
            startup_timeout_s=args.startup_timeout,
            prometheus=args.prometheus,
            postgres=args.postgres,
            starter_grant=args.starter_grant,
            hosts=args.hosts,
            hosts_prefix=args.hosts_prefix,
            hosts_net=args.hosts_net,
        )
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    starting = asyncio.create_task(cluster.start())
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({starting, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await cluster.stop()
        cluster.say("bgcluster: start interrupted; everything stopped")
        return 130
    try:
        starting.result()
    except StartupError as exc:
        cluster.say(f"\nbgcluster: START FAILED: {exc}\nbgcluster: everything stopped")
        return 1
    cluster.say("\nbgcluster: all services SERVING\n" + cluster.address_table())
    cluster.say("bgcluster: Ctrl-C (or SIGTERM) stops everything\n")
    await stopper
    cluster.say("bgcluster: stopping services, then infrastructure")
    await cluster.stop()
    cluster.say("bgcluster: stopped")
    return 1 if cluster.failures else 0


async def _status(args: argparse.Namespace) -> int:
    try:
        rows = await collect(args.data_dir)
    except NoCluster as exc:
        print(f"bgcluster: {exc}", file=sys.stderr)
        return 3
    print(json.dumps(rows, indent=2) if args.json else render(rows))
    return 0 if healthy(rows) else 1


async def _restart(args: argparse.Namespace) -> int:
    try:
        row = await restart(args.data_dir, args.name)
    except (NoCluster, UnknownProcess, TimeoutError) as exc:
        print(f"bgcluster: {exc}", file=sys.stderr)
        return 3 if isinstance(exc, NoCluster) else 1
    print(f"{row['instance']} restarted: pid {row['pid']}, {row['status']}")
    return 0


async def _demo(args: argparse.Namespace) -> int:
    from client.demo import run_demo

    try:
        result = await run_demo(read_state(args.data_dir))
    except NoCluster as exc:
        print(f"bgcluster: {exc}", file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(result))
    else:
        print(f"winner {result['winner']} ({result['end_reason']}), score {result['score']}")
        print(f"seed {result['seed']}  fingerprint {result['fingerprint']}")
        print(f"dice ({len(result['dice'])}): {' '.join(map(str, result['dice']))}")
        print(f"balances before {result['balances_before']}")
        print(f"balances after  {result['balances_after']}  house fees {result['house_fees']}")
    return 0


async def _play(args: argparse.Namespace) -> int:
    from client.terminal import play_terminal, tournament_terminal, watch_terminal
    from infra.cluster.status import read_state

    gateway = args.gateway
    if not gateway:
        try:
            state = read_state(args.data_dir)
        except NoCluster as exc:
            print(f"bgcluster: {exc}", file=sys.stderr)
            return 3
        gateway = next(s["address"] for s in state["services"] if s["name"] == "gateway")
    if args.watch:
        return await watch_terminal(gateway, args.name, args.watch)
    if args.tournament:
        return await tournament_terminal(gateway, args.name, args.tournament)
    return await play_terminal(gateway, args.name, args.vs_cpu, args.create, args.join, args.bet)


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    handler = {
        "up": _up,
        "status": _status,
        "restart": _restart,
        "demo": _demo,
        "play": _play,
        "admin": admin_cli.run,
        "fault": fault_cli.run,
    }[args.command]
    raise SystemExit(asyncio.run(handler(args)))


if __name__ == "__main__":
    main()
