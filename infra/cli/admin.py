"""`bgcluster admin`: the operators' tools (bg.admin.v1.AdminService on the identity service),
one per subcommand; each prints the answer as JSON. Against the local cluster it signs in as the
operator `bgcluster up` made (cluster.json); elsewhere pass --identity (in Kubernetes, a
`kubectl port-forward svc/identity 50057`) and --operator, with the key in BG_OPERATOR_KEY
(never on the command line, where `ps` would show it)."""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from typing import Any

import grpc
from google.protobuf.json_format import MessageToJson

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.analysis.v1 import analysis_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.errors import ServiceError, remote_call


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    admin = sub.add_parser("admin", parents=[common], help="operators' tools (audited)")
    admin.add_argument(
        "--identity", default="", help="identity service address (default: the cluster's)"
    )
    admin.add_argument("--operator", default="", help="operator name (key in BG_OPERATOR_KEY)")
    acts = admin.add_subparsers(dest="action", required=True)
    for name, target, help_text in (
        ("lookup", "player", "a player: balance, ledger, tables, ratings, matches, error rate"),
        ("ban", "player", "ban: tokens stop at once, live tables are left for them"),
        ("unban", "player", "lift a ban"),
        ("restrict", "player", "fair play: casual unrated games only from now (issue 61)"),
        ("unrestrict", "player", "lift a restriction"),
        ("close-table", "table", "close a stuck table undecided: stakes returned (I-10)"),
        ("replay", "player", "replay the player's Kafka events into the leaderboard"),
    ):
        p = acts.add_parser(name, help=help_text)
        p.add_argument(target, help=f"the {target}'s id")
        p.add_argument("--reason", default="", help="why (required but for lookup)")
    for name, help_text in (("credit", "credit diamonds"), ("debit", "debit diamonds")):
        p = acts.add_parser(name, help=help_text + " (kept in the ledger with who and why)")
        p.add_argument("player", help="the player's id")
        p.add_argument("amount", type=int, help="diamonds (a positive whole number)")
        p.add_argument("--reason", required=True, help="why")
        p.add_argument("--key", default="", help="idempotency key (default: a new one)")
    p = acts.add_parser("flags", help="fair play: the review queue, each flag with its evidence")
    p.add_argument(
        "--state",
        choices=["open", "cleared", "restricted", "banned", "all"],
        default="open",
        help="open: the queue waiting for a decision; the others: decided ones, or all",
    )
    p.add_argument("--player", default="", help="only this player's flags")
    p.add_argument("--limit", type=int, default=50, help="at most this many")
    p = acts.add_parser("decide", help="fair play: decide a flag (clear, restrict or ban)")
    p.add_argument("flag", type=int, help="the flag's id (flags lists them)")
    p.add_argument(
        "decision",
        choices=["clear", "restrict", "ban"],
        help="clear: the test starts again from nothing; restrict: casual unrated play only; "
        "ban: as admin ban",
    )
    p.add_argument("--reason", required=True, help="why (kept on the flag and in the audit log)")
    p = acts.add_parser("escrows", help="escrows open longer than --older-than seconds")
    p.add_argument("--older-than", type=int, default=600, help="seconds open, at least")
    p = acts.add_parser("chat-reports", help="players' chat reports waiting, oldest first")
    p.add_argument("--limit", type=int, default=50, help="at most this many")
    p = acts.add_parser("chat-resolve", help="take a chat report off the queue")
    p.add_argument("report", help="the report's id (chat-reports lists them)")
    p.add_argument("--reason", required=True, help="why")
    p = acts.add_parser("chat-remove", help="remove a chat message (gone from every reader)")
    p.add_argument("table", help="the table's id")
    p.add_argument("message", help="the message's id")
    p.add_argument("--reason", required=True, help="why")
    p = acts.add_parser("chat-silence", help="keep a player from chatting (0 s lifts it)")
    p.add_argument("player", help="the player's id")
    p.add_argument("seconds", type=int, help="how long (0 lifts a silence)")
    p.add_argument("--reason", required=True, help="why")
    p = acts.add_parser(
        "tournament-create",
        help="open a knockout tournament for registration",
        description="Open a knockout tournament for registration; players register from the "
        "lobby or `bgcluster play --tournament`. Prints the tournament as JSON.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("name", help="shown to players (1..40 characters)")
    p.add_argument(
        "--kind",
        choices=["sit_and_go", "scheduled"],
        default="sit_and_go",
        help="sit_and_go starts as soon as it is full; scheduled starts at --starts-in with "
        "whoever registered (at least 2)",
    )
    p.add_argument(
        "--profile",
        choices=["casual", "scored", "wagered"],
        default="scored",
        help="the rules of every match (wagered needs --buy-in)",
    )
    p.add_argument(
        "--buy-in",
        type=int,
        default=0,
        help="wagered: each player's buy-in in diamonds (100..2,000 by 100), held at "
        "registration; the pool less 8%% is paid to the final ranks",
    )
    p.add_argument(
        "--size",
        type=int,
        default=8,
        help="sit_and_go: exactly 4, 8, 16 or 32 players; scheduled: the most it takes (2..64)",
    )
    p.add_argument(
        "--starts-in",
        type=int,
        default=600,
        help="scheduled: seconds from now to the start (ignored for a sit-and-go)",
    )
    p.add_argument(
        "--lengths",
        default="1",
        help="each round's match length (1, 3, 5 or 7), comma separated from the first round; "
        "the last one repeats for later rounds, e.g. 1,3,5",
    )
    p = acts.add_parser("tournament-cancel", help="cancel a tournament that has not finished")
    p.add_argument("tournament", help="the tournament's id (buy-ins are refunded)")
    p.add_argument("--reason", required=True, help="why")
    p = acts.add_parser("pools", help="prize pools not settled after --older-than seconds")
    p.add_argument("--older-than", type=int, default=86_400, help="seconds open, at least")
    p = acts.add_parser(
        "pool-refund", help="give back the buy-ins of a pool whose tournament is gone"
    )
    p.add_argument("tournament", help="the pool's tournament id (pools lists them)")
    p.add_argument("--reason", required=True, help="why")
    p = acts.add_parser("audit", help="the audit log, newest first")
    p.add_argument("--target", default="", help="only entries about this player or table")
    p.add_argument("--limit", type=int, default=50, help="at most this many")


def _credentials(args: argparse.Namespace) -> tuple[str, str, str]:
    """(identity service address, operator name, operator key)."""
    from infra.cluster.status import read_state

    address, name, key = args.identity, args.operator, os.environ.get("BG_OPERATOR_KEY", "")
    if not (address and name and key):
        state = read_state(args.data_dir)
        address = address or next(
            s["address"] for s in state["services"] if s["name"] == "identity"
        )
        if not (name and key):
            name, key = state["operator"]["name"], state["operator"]["key"]
    return address, name, key


async def run(args: argparse.Namespace) -> int:
    from infra.cluster.status import NoCluster

    try:
        address, name, key = _credentials(args)
    except NoCluster as exc:
        print(f"bgcluster: {exc}", file=sys.stderr)
        return 3
    async with grpc.aio.insecure_channel(address) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        try:
            login = await remote_call(
                stub.OperatorLogin(admin_pb2.OperatorLoginRequest(name=name, key=key), timeout=10)
            )
            auth = [("authorization", f"Bearer {login.token}")]
            reply = await remote_call(_call(stub, args, auth))
        except ServiceError as err:
            print(f"bgcluster admin: {err.code}: {err.message}", file=sys.stderr)
            return 1
    print(MessageToJson(reply, preserving_proto_field_name=True, indent=1))
    return 0


def _call(stub: admin_pb2_grpc.AdminServiceStub, args: argparse.Namespace, auth: Any) -> Any:
    action = args.action
    if action == "lookup":
        ask = admin_pb2.LookupPlayerRequest(player_id=args.player, reason=args.reason)
        return stub.LookupPlayer(ask, metadata=auth, timeout=30)
    if action in ("credit", "debit"):
        amount = args.amount if action == "credit" else -args.amount
        adjust = admin_pb2.AdjustRequest(
            player_id=args.player,
            amount=amount,
            reason=args.reason,
            idempotency_key=args.key or uuid.uuid4().hex,
        )
        return stub.Adjust(adjust, metadata=auth, timeout=30)
    if action in ("ban", "unban"):
        ban = admin_pb2.BanRequest(player_id=args.player, reason=args.reason)
        method = stub.Ban if action == "ban" else stub.Unban
        return method(ban, metadata=auth, timeout=60)
    if action in ("restrict", "unrestrict"):
        held = admin_pb2.RestrictRequest(player_id=args.player, reason=args.reason)
        if action == "restrict":
            return stub.Restrict(held, metadata=auth, timeout=30)
        return stub.Unrestrict(held, metadata=auth, timeout=30)
    if action == "flags":
        listed = analysis_pb2.ListFlagsRequest(
            state=args.state, limit=args.limit, player_id=args.player
        )
        return stub.ListFlags(listed, metadata=auth, timeout=30)
    if action == "decide":
        decide = admin_pb2.DecideFlagRequest(
            flag_id=args.flag, decision=args.decision, reason=args.reason
        )
        return stub.DecideFlag(decide, metadata=auth, timeout=60)
    if action == "close-table":
        close = admin_pb2.CloseTableRequest(table_id=args.table, reason=args.reason)
        return stub.CloseTable(close, metadata=auth, timeout=30)
    if action == "escrows":
        stale = admin_pb2.ListStaleEscrowsRequest(older_than_s=args.older_than)
        return stub.ListStaleEscrows(stale, metadata=auth, timeout=30)
    if action == "pools":
        pools = admin_pb2.ListStalePoolsRequest(older_than_s=args.older_than)
        return stub.ListStalePools(pools, metadata=auth, timeout=60)
    if action == "pool-refund":
        refund = admin_pb2.RefundOrphanPoolRequest(
            tournament_id=args.tournament, reason=args.reason
        )
        return stub.RefundOrphanPool(refund, metadata=auth, timeout=30)
    if action == "replay":
        replay = admin_pb2.ReplayPlayerRequest(player_id=args.player, reason=args.reason)
        return stub.ReplayPlayer(replay, metadata=auth, timeout=300)
    if action.startswith("chat-"):
        return _chat_call(stub, args, auth)
    if action.startswith("tournament-"):
        return _tournament_call(stub, args, auth)
    audit = admin_pb2.ListAuditRequest(limit=args.limit, target=args.target)
    return stub.ListAudit(audit, metadata=auth, timeout=30)


def _chat_call(stub: admin_pb2_grpc.AdminServiceStub, args: argparse.Namespace, auth: Any) -> Any:
    action = args.action
    if action == "chat-reports":
        listed = admin_pb2.ListChatReportsRequest(limit=args.limit)
        return stub.ListChatReports(listed, metadata=auth, timeout=30)
    if action == "chat-resolve":
        done = admin_pb2.ResolveChatReportRequest(report_id=args.report, reason=args.reason)
        return stub.ResolveChatReport(done, metadata=auth, timeout=30)
    if action == "chat-remove":
        gone = admin_pb2.RemoveChatMessageRequest(
            table_id=args.table, message_id=args.message, reason=args.reason
        )
        return stub.RemoveChatMessage(gone, metadata=auth, timeout=30)
    quiet = admin_pb2.SilenceChatPlayerRequest(
        player_id=args.player, seconds=args.seconds, reason=args.reason
    )
    return stub.SilenceChatPlayer(quiet, metadata=auth, timeout=30)


def _tournament_call(
    stub: admin_pb2_grpc.AdminServiceStub, args: argparse.Namespace, auth: Any
) -> Any:
    if args.action == "tournament-cancel":
        cancel = matchmaking_pb2.CancelTournamentRequest(
            tournament_id=args.tournament, reason=args.reason
        )
        return stub.CancelTournament(cancel, metadata=auth, timeout=30)
    lengths = [int(n) for n in args.lengths.split(",") if n.strip()]
    starts = int(time.time() * 1000) + args.starts_in * 1000 if args.kind == "scheduled" else 0
    create = matchmaking_pb2.CreateTournamentRequest(
        name=args.name,
        kind=args.kind,
        size=args.size,
        starts_ms=starts,
        lengths=lengths,
        options=table_pb2.TableOptions(
            profile=args.profile, match_length=lengths[0], bet=args.buy_in
        ),
        request_id=uuid.uuid4().hex,
    )
    return stub.CreateTournament(create, metadata=auth, timeout=30)
