"""Issue 42's Jepsen-style suite: the cluster on test hosts (every process in its own network
namespace with its own address: infra/cluster/hosts.py), two gateways, two table replicas,
PostgreSQL, the event log in the production `kafka` mode; wagered and casual pairs and a wagered
sit-and-go play through the gateways while fault after fault is made and healed with the
operators' API (infra/cluster/faults.py): a table replica cut off from Valkey; a gateway cut off
from Valkey, then from the table replicas (not from its players); the wallet cut off from
PostgreSQL; the broker cut off from everyone; the director (matchmaking) isolated; Valkey's
packets to a table replica dropped one way; a table replica's link flapping; table replicas'
clocks skewed +2 s and -30 s (make partitions: +2 s, -2 s, +30 s and -30 s).

Every client call and answer goes into a history (tests/cluster/history.py). After the last heal the
checker (tests/cluster/partition_checks.py) proves: every diamond exact to the rules and the books
balanced; no acknowledged command lost and none applied twice; every table's events contiguous;
no timeout before its deadline and no act accepted after it, by the reference clock (I-40);
downstream each event once (the leaderboard equals a rebuild from its archive, every match
analysed once); every tournament pairing dealt once and its prizes paid once. It prints what
players saw per fault: failed calls by gateway, players affected, seconds from the heal until
all succeed.

`make test` holds each fault BG_PARTITION_SECONDS=2; `make partitions` runs it longer, in both
event-log modes (BG_PARTITION_MODES=kafka,embedded), and writes the figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis.asyncio as redis_asyncio
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.events.v1 import events_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2, table_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.tournament import settled
from infra.cluster.faults import Faults
from infra.cluster.runner import Cluster, ClusterConfig
from infra.cluster.status import read_state
from services.common.connections import sql_engine
from services.contracts.redis_keys import TABLE_REPLICAS as MEMBERS
from services.contracts.redis_keys import lobby_key
from services.contracts.shards import assign, live_members, shard_of
from tests.cluster.boards import assert_boards_equal_a_rebuild
from tests.cluster.drivers import compete, play_tables
from tests.cluster.history import History, RecordedPlayer, Window
from tests.cluster.money import books, settle_down
from tests.cluster.partition_checks import (
    acknowledged_kept,
    contiguous,
    deadlines_kept,
    read_streams,
    untouched_figures,
    untouched_kept,
)
from tests.cluster.test_tournament_faults import _ledger, decided_as
from tests.helpers import awaited, retried, scrape_metrics

pytestmark = pytest.mark.e2e
SECONDS = float(os.environ.get("BG_PARTITION_SECONDS", "1.5"))
MODES = os.environ.get("BG_PARTITION_MODES", "kafka").split(",")
BET, FUNDS, BUY_IN, ENTRANT_FUNDS = 100, 100_000, 100, 1000
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
GATEWAYS = ("gateway-1", "gateway-2")
# The pairs' tables, in turn on gateway-1 and gateway-2 (make partitions plays one more), and
# the seconds each pair's players think before a command: the second pair dawdles, so their
# turns run into the wagered clock (45 s x 0.05 + 1.5 s grace) and acts meet deadlines.
PROFILES = ["wagered", "wagered", "casual", "wagered"]
THINK_S = [0.05, 0.8, 0.05, 0.05]
# The embedded log's generations: a period short enough for the broker's cut to outlive one,
# its history (30 periods) long enough for the analysis's lag under this load.
EMBEDDED_ROTATE_S = 10.0
LONG = SECONDS >= 5  # make partitions: every skew the issue names, and a fourth pair
PAIRS = 4 if LONG else 3


@dataclass
class Fault:
    name: str
    hosts: frozenset[str]
    make: Callable[[Faults], Awaitable[dict[str, Any] | None]]  # figures of its own, if any
    heal: bool = True  # a network fault, healed after SECONDS (a skew stays)
    embedded_hold_s: float = 0.0  # in embedded mode, held at least this long


async def _partition(faults: Faults, *groups: list[str]) -> None:
    faults.partition(*groups)


def _cut(a: list[str], b: list[str]) -> Callable[[Faults], Awaitable[None]]:
    return lambda f: _partition(f, a, b)


async def _isolate(faults: Faults, host: str) -> None:
    faults.isolate(host)


async def _drop(faults: Faults, source: str, destination: str) -> None:
    faults.drop(source, destination)


async def _skew(faults: Faults, name: str, ms: int) -> None:
    await faults.skew(name, ms)


def _skewed(name: str, ms: int) -> Callable[[Faults], Awaitable[None]]:
    return lambda f: _skew(f, name, ms)


async def _owner_cut(faults: Faults) -> dict[str, Any]:
    """table-1 cut off from Valkey; how long until the live leases no longer name it (its
    shards, their clocks and their commands, are table-2's from then on)."""
    faults.partition(["table-1"], ["valkey"])
    start = time.monotonic()
    client = redis_asyncio.Redis.from_url(read_state(faults.data_dir)["redis_url"])
    try:
        while time.monotonic() - start < 30:
            seconds, micros = await client.time()
            now = seconds * 1000 + micros // 1000
            live: list[bytes | str] = await client.zrangebyscore(MEMBERS, now, "+inf")  # type: ignore[assignment]
            if "table-1" not in live_members(live):
                return {"shards_moved_after_s": round(time.monotonic() - start, 1)}
            await asyncio.sleep(0.05)
    finally:
        await client.aclose()
    raise AssertionError("table-1's shards never moved")


SKEWS = (
    [("table-1", 2_000), ("table-2", -2_000), ("table-1", 30_000), ("table-2", -30_000)]
    if LONG
    else [("table-1", 2_000), ("table-2", -30_000)]  # all four: tests/table/test_store_clock.py
)
FAULTS = [
    Fault("table-1 | valkey", frozenset({"table-1", "valkey"}), _owner_cut),
    Fault(
        "gateway-1 | valkey", frozenset({"gateway-1", "valkey"}), _cut(["gateway-1"], ["valkey"])
    ),
    Fault(  # the replicas lose only their links to gateway-1: gateway-2's calls are untouched
        "gateway-1 | table replicas",
        frozenset({"gateway-1"}),
        _cut(["gateway-1"], ["table-1", "table-2"]),
    ),
    Fault("wallet | postgres", frozenset({"wallet", "postgres"}), _cut(["wallet"], ["postgres"])),
    Fault(
        "kafka isolated",
        frozenset({"kafka"}),
        lambda f: _isolate(f, "kafka"),
        embedded_hold_s=EMBEDDED_ROTATE_S + 2,  # longer than a generation is written
    ),
    Fault("matchmaking isolated", frozenset({"matchmaking"}), lambda f: _isolate(f, "matchmaking")),
    Fault(
        "valkey -> table-2 dropped (one way)",
        frozenset({"valkey", "table-2"}),
        lambda f: _drop(f, "valkey", "table-2"),
    ),
    Fault(
        "table-1 flapping",
        frozenset({"table-1"}),
        lambda f: f.flap("table-1", times=3, period_s=max(1.0, SECONDS / 2)),
        heal=False,
    ),
    *(
        Fault(f"{name} clock {ms / 1000:+g} s", frozenset({name}), _skewed(name, ms), False)
        for name, ms in SKEWS
    ),
]  # fmt: skip


@dataclass
class Traffic:
    history: History
    stop: asyncio.Event
    tables: dict[str, str]  # table id -> profile


async def _deposit(wallet: str, token: str, player_id: str, amount: int) -> None:
    async with grpc.aio.insecure_channel(wallet) as channel:
        await wallet_pb2_grpc.WalletServiceStub(channel).Deposit(
            wallet_pb2.DepositRequest(
                idempotency_key=f"fund:{player_id}", player_id=player_id, amount=amount
            ),
            metadata=[("x-operator-token", token)],
        )


async def _read_views(players: list[RecordedPlayer], stop: asyncio.Event) -> None:
    """A client's reads beside its Play stream (a resync, the web client's refresh): each
    player's GetView of the table it plays, every half second, into the history."""
    while not stop.is_set():
        reads = [p.view(p.session.table_id) for p in players if p.session is not None]
        await asyncio.gather(*reads, return_exceptions=True)
        await asyncio.sleep(0.5)


async def _relay_lag(tables: list[Any], stop: asyncio.Event) -> float:
    """The highest `bg_table_relay_lag_seconds` the table replicas report until `stop` (each
    scraped four times a second)."""
    seen = 0.0
    while not stop.is_set():
        for inst in tables:
            try:
                text = await scrape_metrics(inst.metrics_port, inst.host)
            except OSError:
                continue  # a replica the fault cut off from the machine
            for family in text_string_to_metric_families(text):
                if family.name == "bg_table_relay_lag_seconds":
                    seen = max([seen, *(sample.value for sample in family.samples)])
        await asyncio.sleep(0.25)
    return seen


def _owner_of(replicas: list[str]) -> Callable[[str], str]:
    """A table's owner while every replica is live (the shards' split the gateways compute)."""
    by_shard = {s: member for member, shards in assign(replicas).items() for s in shards}
    return lambda table_id: by_shard[shard_of(table_id)]


async def _analysed_once(url: str, until: float) -> int:
    """Every archived match with a play in it analysed, once (one row, at most one error-rate
    row per player). Returns how many."""
    leaderboard, analysis = sql_engine(f"{url}/leaderboard"), sql_engine(f"{url}/analysis")
    try:
        async with leaderboard.connect() as conn:
            archived = (await conn.execute(text("SELECT match_id, event FROM matches"))).all()
        wanted = set()
        for match_id, raw in archived:
            end = events_pb2.TableEvent.FromString(bytes(raw))
            body = getattr(end, end.WhichOneof("body") or "")
            if any(m.WhichOneof("body") == "turn_ended" for m in body.moves):
                wanted.add(match_id)
        states: dict[str, str] = {}
        while time.monotonic() < until:
            async with analysis.connect() as conn:
                rows = await conn.execute(text("SELECT match_id, state FROM analyses"))
                states = {str(m): str(s) for m, s in rows.all()}
            if all(states.get(m) == "done" for m in wanted):
                break
            await asyncio.sleep(1)
        assert {m: states.get(m) for m in wanted} == {m: "done" for m in wanted}
        async with analysis.connect() as conn:
            per = await conn.execute(
                text("SELECT match_id, count(*) FROM player_errors GROUP BY match_id")
            )
            assert all(n <= 2 for _, n in per.all())
        return len(wanted)
    finally:
        await leaderboard.dispose()
        await analysis.dispose()


async def _open_tournament(identity: str, operator_key: str) -> str:
    async with grpc.aio.insecure_channel(identity) as ch:
        admin = admin_pb2_grpc.AdminServiceStub(ch)
        login = await admin.OperatorLogin(
            admin_pb2.OperatorLoginRequest(name="admin", key=operator_key)
        )
        made = await admin.CreateTournament(
            matchmaking_pb2.CreateTournamentRequest(
                name="Partition cup", kind="sit_and_go", size=4,
                options=table_pb2.TableOptions(profile="wagered", match_length=1, bet=BUY_IN),
            ),
            metadata=[("authorization", f"Bearer {login.token}")],
        )  # fmt: skip
    return str(made.tournament_id)


async def _tournament_checked(
    players: list[RecordedPlayer], tournament_id: str, redis_url: str, tables: Any, url: str
) -> dict[str, Any]:
    """Every pairing dealt once (one lobby table, one match on it, decided as the bracket
    says), the pool captured once and paid once, every balance the rules' to the diamond."""
    asked = matchmaking_pb2.TournamentRequest(tournament_id=tournament_id)
    final = await awaited(
        lambda: players[0].rpc(players[0].stub.GetTournament, asked),
        settled,
        time.monotonic() + 90,
    )
    assert (final.status, final.money) == ("finished", "paid")
    played = [m for m in final.matches if m.top_id and m.bottom_id]
    assert len(played) == 3 and all(m.winner_id in (m.top_id, m.bottom_id) for m in played)
    client = redis_asyncio.Redis.from_url(redis_url)
    try:
        for m in played:
            doc = await client.get(lobby_key(m.table_id))
            assert doc is not None and b'"matches": 1' in doc
            outcome = await tables.GetMatchOutcome(
                table_pb2.GetMatchOutcomeRequest(table_id=m.table_id, match_id=f"{m.table_id}-1")
            )
            decided_as(outcome, m)
        dealt = [
            k for k in await client.keys(lobby_key("*"))
            if tournament_id.encode() in (await client.get(k) or b"")
        ]  # fmt: skip
        assert len(dealt) == 3  # no second table for any pairing
    finally:
        await client.aclose()
    prizes = {x.player_id: x.amount for x in final.prizes}
    kinds, balances, problems = await _ledger(f"{url}/wallet", [p.player_id for p in players])
    assert kinds == {"hold_buyin": 4, "start_pool": 1, "pay_prizes": 1}, kinds
    assert balances == {
        p.player_id: ENTRANT_FUNDS - BUY_IN + prizes.get(p.player_id, 0) for p in players
    }
    assert problems == []
    return {"pairings": len(played), "prizes": sorted(prizes.values(), reverse=True)}


@pytest.mark.timeout(1200 if LONG else 600)
@pytest.mark.parametrize("mode", MODES)
async def test_partitions_skews_and_flaps_lose_nothing_and_fire_nothing_early(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BG_CLOCK_SCALE", "0.05")
    monkeypatch.setenv("BG_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("BG_WALLET_ESCROW_BOUND_S", "15")
    monkeypatch.setenv("BG_WALLET_RECONCILE_INTERVAL_S", "1")
    monkeypatch.setenv("BG_KAFKA_ROTATE_S", str(EMBEDDED_ROTATE_S))
    data = tmp_path / "data"
    log = (tmp_path / "cluster.log").open("w")
    config = ClusterConfig(
        replicas={"table": 2, "gateway": 2}, data_dir=data, base_port=0, kafka_log=mode,
        hosts=True, hosts_prefix="bgp", hosts_net=216, startup_timeout_s=120,
        postgres=True,  # the SQL services on PostgreSQL: a host of its own to cut off
    )  # fmt: skip
    cluster = Cluster(config, log)
    await cluster.start()
    faults = Faults(data)
    address = {i.name: i.address for i in cluster.instances}
    channels: list[grpc.aio.Channel] = []
    traffic = Traffic(History(), asyncio.Event(), {})
    tasks: list[asyncio.Task[None]] = []
    reader: asyncio.Task[None] | None = None
    try:
        tag = uuid.uuid4().hex[:4]
        players: list[RecordedPlayer] = []
        for i in range(2 * PAIRS + 4):  # pairs (one gateway each), 4 in the tournament (both)
            gateway = GATEWAYS[(i // 2) % 2] if i < 2 * PAIRS else GATEWAYS[i % 2]
            channels.append(grpc.aio.insecure_channel(address[gateway], options=OPTIONS))
            think = THINK_S[i // 2] if i < 2 * PAIRS else 0.05
            player = RecordedPlayer(channels[-1], f"p{tag}{i}", gateway, traffic.history, i, think)
            await player.login()
            players.append(player)
        pairs, entrants = players[: 2 * PAIRS], players[2 * PAIRS :]
        for p in pairs:
            await _deposit(address["wallet"], cluster.operator_token, p.player_id, FUNDS)
        tournament_id = await _open_tournament(address["identity"], cluster.operator_key)
        for p in entrants:
            await _deposit(address["wallet"], cluster.operator_token, p.player_id, ENTRANT_FUNDS)
            await p.rpc(
                p.stub.RegisterTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=tournament_id),
            )
        tasks = [
            asyncio.create_task(
                play_tables(
                    pairs[2 * n : 2 * n + 2], PROFILES[n], BET, traffic.stop, traffic.tables
                )
            )
            for n in range(PAIRS)
        ] + [asyncio.create_task(compete(p, tournament_id, 600, traffic.tables)) for p in entrants]
        reader = asyncio.create_task(_read_views(pairs, traffic.stop))
        await asyncio.sleep(SECONDS)
        table_replicas = [i for i in cluster.instances if i.service == "table"]
        for fault in FAULTS:
            window = Window(fault.name, fault.hosts, time.time())
            traffic.history.windows.append(window)
            sampled = asyncio.Event()
            lag = asyncio.create_task(_relay_lag(table_replicas, sampled))
            window.figures = await fault.make(faults) or {}
            if fault.heal:
                held = fault.embedded_hold_s if mode == "embedded" else 0.0
                await asyncio.sleep(max(SECONDS, held))
                faults.heal()
            window.healed = time.time()
            await asyncio.sleep(SECONDS)
            sampled.set()
            window.figures["relay_lag_max_s"] = round(await lag, 1)
        traffic.stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks[:PAIRS], return_exceptions=True), 120)
        await asyncio.wait_for(asyncio.gather(*tasks[PAIRS:]), 300)
        await reader

        # Quiescence: abandoned matches end by their clocks; every escrow and hold closes.
        url = cluster.postgres_url
        assert await settle_down(f"{url}/wallet", time.monotonic() + 120) == (0, 0)
        table_stub = table_pb2_grpc.TableServiceStub(grpc.aio.insecure_channel(address["table-1"]))
        funds = {p.player_id: FUNDS for p in pairs}
        ledger = await books(f"{url}/wallet", table_stub, funds, BET)
        assert ledger.closed, "no wagered match was dealt"
        for p in pairs:
            assert await retried(p.balance, time.monotonic() + 30) == ledger.expected[p.player_id]
        cup = await _tournament_checked(entrants, tournament_id, cluster.redis_url, table_stub, url)

        streams = await read_streams(cluster.redis_url, list(traffic.tables))
        assert contiguous(streams) == []
        assert acknowledged_kept(traffic.history, streams) == []
        clocks = deadlines_kept(streams)
        assert clocks.problems == []
        assert clocks.timeouts and clocks.acts_on_clock  # the clocks ran and were checked

        # Downstream, each event once: the boards equal a rebuild of their archive, every
        # match is analysed once.
        await assert_boards_equal_a_rebuild(
            f"{url}/leaderboard", tmp_path, cluster.redis_url, [p.player_id for p in players]
        )
        analysed = await _analysed_once(url, time.monotonic() + 240)

        # A gateway's own faults reach its own players only; a player whose table's owner and
        # gateway a fault did not touch sees no error and no call over a second (issue 58).
        seen = {r["fault"]: r for r in traffic.history.report()}
        for name in ("gateway-1 | valkey", "gateway-1 | table replicas"):
            assert seen[name]["failed_calls"].get("gateway-2", 0) == 0, seen[name]
        owner_of = _owner_of(["table-1", "table-2"])
        for name, untouched in untouched_figures(traffic.history, owner_of).items():
            seen[name]["untouched_table_calls"] = untouched
        untouched_problems = untouched_kept(traffic.history, owner_of)
        # The relay's lag shows a broker outage while it lasts (issue 58: it stayed at 0-0.015
        # through a 10 s isolation); RelayLagging's expression over it is promtool's test.
        cut = seen["kafka isolated"]
        assert cut["relay_lag_max_s"] >= 0.5, cut
        figures = {
            "mode": mode,
            "fault_held_s": SECONDS,
            "tables": len(traffic.tables),
            "commands_acknowledged": len(traffic.history.acknowledged()),
            "commands_retried_by_a_gateway": sum(
                c.duplicate for c in traffic.history.acknowledged()
            ),
            "calls": len(traffic.history.calls),
            "wagered_closed": {
                s: sum(e.status == s for e in ledger.closed) for s in ("settled", "refunded")
            },
            "timeouts_checked": clocks.timeouts,
            "acts_checked_against_clock": clocks.acts_on_clock,
            "matches_analysed": analysed,
            "tournament": cup,
            "diamonds_lost_or_doubled": 0,
            "untouched_calls_failed_or_over_1s": untouched_problems,
            "faults": list(seen.values()),
        }
        print(json.dumps(figures, indent=1))
        if out := os.environ.get("BG_PARTITION_OUT", ""):  # make partitions' figures
            path = Path(out) / f".partitions-{mode}.json"
            await asyncio.to_thread(path.write_text, json.dumps(figures, indent=1))
        assert untouched_problems == []
    finally:
        traffic.stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        for ch in channels:
            await ch.close(None)
        await cluster.stop()
        log.close()
