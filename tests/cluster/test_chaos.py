"""Issue 13's chaos test: while wagered and casual matches run through the gateway, kill -9 in
turn a table replica, the gateway, matchmaking, the wallet, the leaderboard, the bots worker,
the analysis service, Valkey and the Kafka broker; the runner's supervision brings each back.
Afterwards: every dealt wagered match is settled once or refunded once, in agreement with its
table's outcome; the books balance to the diamond and no escrow or hold is left open; no table
is stuck; no record is missing; the leaderboard equals a rebuild from its archive; every
archived match with a play in it is analysed, once. Prints the figures per fault.

It runs in both event-log modes (issue 42): `embedded` (Tansu on memory, which forgets when
killed: the outboxes are the durable log) and `kafka`, production's (one topic each, group-managed
consumers; the broker is the durable log, so Tansu keeps its messages in SeaweedFS's S3 store
through its kill, as Kafka's replicas would). `make test` runs it short (BG_CHAOS_SECONDS=1.5 of
play after each restart); `make chaos` runs it longer (BG_CHAOS_SECONDS=20).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from bg.events.v1 import events_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2, table_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.player import Player
from infra.cluster.runner import Cluster, ClusterConfig
from infra.cluster.status import collect
from services.contracts.vocabulary import FINISHED
from tests.cluster.boards import assert_boards_equal_a_rebuild
from tests.cluster.drivers import play_tables
from tests.cluster.money import books, settle_down
from tests.helpers import retried

pytestmark = pytest.mark.e2e
SECONDS = float(os.environ.get("BG_CHAOS_SECONDS", "1.5"))
# The event log's two modes (services/common/embedded_generations.py): the embedded one on a
# broker that forgets, and production's (issue 42).
MODES = os.environ.get("BG_CHAOS_MODES", "embedded,kafka").split(",")
FAULTS = [
    "table-1", "gateway", "matchmaking", "wallet", "leaderboard", "bots", "analysis", "identity",
    "valkey", "kafka",
]  # fmt: skip
# In kafka mode, the parts whose work the event log's mode changes (relays, outboxes, consumers,
# the broker, the store of the tables' outboxes); the others' kills are the embedded run's.
MODE_FAULTS = ["table-1", "wallet", "leaderboard", "analysis", "valkey", "kafka"]
PAIRS = 4  # 3 wagered pairs, 1 casual pair
BET = 100
FUNDS = 100_000
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


@dataclass
class Fault:
    name: str
    downtime_s: float = 0.0
    failed_calls: int = 0  # driver calls that failed while this fault was active
    tables_affected: set[str] = field(default_factory=set)


@dataclass
class Run:
    tables: dict[str, str] = field(default_factory=dict)  # table id -> profile
    failures: int = 0
    current: Fault | None = None

    def failed(self, table_id: str = "") -> None:
        self.failures += 1
        if self.current is not None:
            self.current.failed_calls += 1
            if table_id:
                self.current.tables_affected.add(table_id)


async def _await_back(data_dir: Path, name: str, dead_pid: int, until: float) -> float:
    started = time.monotonic()
    while time.monotonic() < until:
        rows = {r["instance"]: r for r in await collect(data_dir)}
        row = rows[name]
        if row["pid"] != dead_pid and row["status"] == "SERVING":
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} did not come back")


def _pid_of(cluster: Cluster, name: str) -> int:
    procs = [i.process for i in cluster.instances if i.process] + cluster.infra
    pid = next(p.pid for p in procs if p.name == name)
    assert pid is not None
    return pid


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute(sql))


async def _every_match_analysed_once(data: Path, until: float) -> int:
    """Issue 28: every match the leaderboard archived with a play in it reaches the analysis
    service and is stored done (once: one row per match, one error-rate row per player at most),
    whatever was killed meanwhile. Returns how many."""
    wanted = set()
    for match_id, raw in _rows(data / "leaderboard.db", "SELECT match_id, event FROM matches"):
        end = events_pb2.TableEvent.FromString(bytes(raw))
        body = getattr(end, end.WhichOneof("body") or "")
        if any(m.WhichOneof("body") == "turn_ended" for m in body.moves):
            wanted.add(match_id)
    assert wanted, "no match was archived"
    states: dict[str, str] = {}
    while time.monotonic() < until:
        states = dict(_rows(data / "analysis.db", "SELECT match_id, state FROM analyses"))
        if all(states.get(m) == "done" for m in wanted):
            break
        await asyncio.sleep(1)
    assert {m: states.get(m) for m in wanted} == {m: "done" for m in wanted}
    per_match = _rows(
        data / "analysis.db", "SELECT match_id, count(*) FROM player_errors GROUP BY match_id"
    )
    assert all(n <= 2 for _, n in per_match)
    return len(wanted)


@pytest.mark.timeout(int(360 + 30 * SECONDS))  # make chaos's longer plays too
@pytest.mark.parametrize("mode", MODES)
async def test_chaos_every_part_killed_in_turn_loses_nothing(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BG_CLOCK_SCALE", "0.05")
    monkeypatch.setenv("BG_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("BG_WALLET_ESCROW_BOUND_S", "15")
    monkeypatch.setenv("BG_WALLET_RECONCILE_INTERVAL_S", "1")
    data = tmp_path / "data"
    log = (tmp_path / "cluster.log").open("w")
    # kafka mode: the broker is the durable log, so it keeps its messages in SeaweedFS's S3
    # store through its kill (production: Kafka's replicas); embedded: the outboxes are.
    config = ClusterConfig(
        replicas={"table": 2}, data_dir=data, base_port=0, kafka_log=mode,
        kafka_storage="s3" if mode == "kafka" else "memory",
    )  # fmt: skip
    cluster = Cluster(config, log)
    await cluster.start()
    gateway = next(i.address for i in cluster.instances if i.service == "gateway")
    wallet_address = next(i.address for i in cluster.instances if i.service == "wallet")
    channels = [grpc.aio.insecure_channel(gateway, options=OPTIONS) for _ in range(2 * PAIRS)]
    run = Run()
    faults: list[Fault] = []
    stop = asyncio.Event()
    drivers: list[asyncio.Task[None]] = []
    try:
        tag = uuid.uuid4().hex[:6]
        players = [Player(ch, f"chaos{tag}{i}", seed=i) for i, ch in enumerate(channels)]
        for p in players:
            await p.login()
        async with grpc.aio.insecure_channel(wallet_address) as wch:
            wallet = wallet_pb2_grpc.WalletServiceStub(wch)
            for p in players:
                request = wallet_pb2.DepositRequest(
                    idempotency_key=f"fund:{p.player_id}", player_id=p.player_id, amount=FUNDS
                )
                await wallet.Deposit(
                    request, metadata=[("x-operator-token", cluster.operator_token)]
                )
        pairs = [players[i : i + 2] for i in range(0, len(players), 2)]
        drivers = [
            asyncio.create_task(
                play_tables(
                    pair, "casual" if i == 0 else "wagered", BET, stop, run.tables, run.failed
                )
            )
            for i, pair in enumerate(pairs)
        ]
        await asyncio.sleep(SECONDS)
        rng = random.Random(13)
        for name in FAULTS if mode == "embedded" else MODE_FAULTS:
            fault = Fault(name)
            faults.append(fault)
            run.current = fault
            dead = _pid_of(cluster, name)
            os.kill(dead, signal.SIGKILL)
            fault.downtime_s = await _await_back(data, name, dead, time.monotonic() + 90)
            await asyncio.sleep(SECONDS + rng.random())
        run.current = None
        stop.set()
        await asyncio.wait_for(asyncio.gather(*drivers, return_exceptions=True), 90)

        # Quiescence: abandoned matches end by their clocks; every escrow and hold closes.
        wallet_url = f"sqlite+aiosqlite:///{data / 'wallet.db'}"
        open_escrows, open_holds = await settle_down(wallet_url, time.monotonic() + 120)
        assert (open_escrows, open_holds) == (0, 0)
        wagered = [t for t, profile in run.tables.items() if profile == "wagered"]
        tables = [
            table_pb2_grpc.TableServiceStub(grpc.aio.insecure_channel(i.address))
            for i in cluster.instances
            if i.service == "table"
        ]
        # Each escrow closed once, as its table says the match went, and every balance exact
        # to the diamond, worked out from the tables' side alone (tests/cluster/money.py).
        ledger = await books(wallet_url, tables[0], {p.player_id: FUNDS for p in players}, BET)
        closed, expected = ledger.closed, ledger.expected
        assert wagered and closed, "no wagered match was dealt"
        for e in closed:  # every settled match's record is there
            if e.status == "settled":
                record = await tables[0].GetMatchRecord(
                    table_pb2.GetMatchRecordRequest(
                        table_id=e.match_id.rsplit("-", 1)[0], match_id=e.match_id
                    )
                )
                assert record.seed_hex and record.winner in (0, 1)

        for p in players:
            assert await retried(p.balance, time.monotonic() + 30) == expected[p.player_id]

        # No table stuck: every dealt table finished or moving on its clock; none left dealing
        # (the saga's sweeper undoes a deal a fault cut in half).
        stuck = []
        for table_id in run.tables:
            lobby = await retried(
                lambda t=table_id: players[0].rpc(
                    players[0].stub.GetTable, matchmaking_pb2.TableRequest(table_id=t)
                ),
                time.monotonic() + 30,
            )
            if lobby.status == "dealt":
                view = await tables[0].GetView(
                    table_pb2.GetViewRequest(table_id=table_id, player_id=lobby.player_ids[0])
                )
                # Unfinished is fine while its clock runs (an abandoned match plays out on its
                # deadlines); stuck is no deadline, or one long past (a clock that never fired).
                # Casual tables have no clock (async, I-25): waiting for the players is their rule.
                late_ms = time.time() * 1000 - view.deadline_ms
                clocked = run.tables[table_id] != "casual"
                if (
                    clocked
                    and view.phase not in FINISHED
                    and (not view.deadline_ms or late_ms > 5000)
                ):
                    stuck.append((table_id, events_pb2.Phase.Name(view.phase)))
            elif lobby.status not in ("closed", "open"):  # open: waits for a player, holds nothing
                stuck.append((table_id, lobby.status))
        assert stuck == []

        # Every settled match is in its players' archive, with its moves and seed; nobody
        # else may read it.
        by_id = {p.player_id: p for p in players}
        settled = [e for e in closed if e.status == "settled"]
        for e in settled:
            owner = by_id[e.player_a]
            archived = await retried(
                lambda m=e.match_id, o=owner: o.rpc(
                    o.stub.GetArchivedMatch, leaderboard_pb2.ArchivedMatchRequest(match_id=m)
                ),
                time.monotonic() + 30,
            )
            assert archived.moves and archived.seed_hex and archived.summary.winner_seat in (0, 1)
        outsider = next(
            p for p in players if p.player_id not in (closed[0].player_a, closed[0].player_b)
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await outsider.rpc(
                outsider.stub.GetArchivedMatch,
                leaderboard_pb2.ArchivedMatchRequest(match_id=closed[0].match_id),
            )
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND

        # The leaderboard equals a rebuild from its own archive (the topics' history is
        # bounded, and the broker forgot it when it was killed): nothing applied twice.
        await assert_boards_equal_a_rebuild(
            data / "leaderboard.db", tmp_path, cluster.redis_url, [p.player_id for p in players]
        )

        analysed = await _every_match_analysed_once(data, time.monotonic() + 240)

        figures = {
            "mode": mode,
            "seconds_between_faults": SECONDS,
            "matches_analysed": analysed,
            "tables": len(run.tables),
            "wagered_closed": {
                "settled": sum(e.status == "settled" for e in closed),
                "refunded": sum(e.status == "refunded" for e in closed),
            },
            "diamonds_stuck": 0,
            "faults": [
                {
                    "killed": f.name,
                    "downtime_s": round(f.downtime_s, 1),
                    "failed_calls": f.failed_calls,
                    "tables_affected": len(f.tables_affected),
                }
                for f in faults
            ],
        }
        print(json.dumps(figures, indent=1))
        (tmp_path / "chaos.json").write_text(json.dumps(figures))
    finally:
        stop.set()
        for task in drivers:
            task.cancel()
        for ch in channels:
            await ch.close(None)
        await cluster.stop()
        log.close()
