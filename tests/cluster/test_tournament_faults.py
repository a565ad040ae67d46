"""Issue 29, tournaments under faults: a wagered sit-and-go of 8 (a buy-in of 100, matches to 5)
is played to its champion while the matchmaking service (the director, twice), the wallet
(twice), a table replica and the gateway are killed -9 in turn mid-round; the runner's
supervision brings each back. Afterwards: every pairing of the bracket was dealt exactly once
(one table, one match on the table service), no player was lost from the bracket, the ranks are
the bracket's, the pool was captured once and paid once, every balance is the rules' to the
diamond and the ledger's books balance, and the champion's win reached the leaderboard."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import grpc
import pytest
import redis.asyncio as redis_asyncio
from sqlalchemy import func, select

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2, table_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.player import Player
from client.tournament import settled
from infra.cluster.runner import Cluster, ClusterConfig
from services.common.connections import sql_engine
from services.contracts.redis_keys import lobby_key
from services.wallet.ledger import Ledger, check_invariants
from services.wallet.schema import operations
from tests.cluster.drivers import compete
from tests.cluster.test_chaos import _await_back, _pid_of
from tests.helpers import awaited, retried

pytestmark = pytest.mark.e2e
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
FAULTS = ["matchmaking", "wallet", "table-1", "gateway", "matchmaking", "wallet"]
FUNDS, BUY_IN = 1000, 100


async def fund(address: str, token: str, player_id: str) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        await wallet_pb2_grpc.WalletServiceStub(channel).Deposit(
            wallet_pb2.DepositRequest(
                idempotency_key=f"fund:{player_id}", player_id=player_id, amount=FUNDS
            ),
            metadata=[("x-operator-token", token)],
        )


async def _ledger(url: str, players: list[str]) -> tuple[dict[str, int], dict[str, int], list[str]]:
    """(tournament operations by kind, each player's balance, the books' problems)."""
    engine = sql_engine(url)
    try:
        async with engine.connect() as conn:
            tournament_kinds = ("hold_buyin", "start_pool", "pay_prizes", "refund_pool", "release")
            rows = await conn.execute(
                select(operations.c.kind, func.count())
                .where(operations.c.kind.in_(tournament_kinds))
                .group_by(operations.c.kind)
            )
            kinds = {str(kind): int(n) for kind, n in rows.all()}
        balances = {p: await Ledger(engine).balance(p) for p in players}
        return kinds, balances, await check_invariants(engine)
    finally:
        await engine.dispose()


def decided_as(outcome: table_pb2.MatchOutcome, match: matchmaking_pb2.TournamentMatch) -> None:
    """The bracket moved on whom the table says won; or, for a match the table closed undecided
    (both players away past the window under a fault, I-9), the higher seed (its top)."""
    if outcome.state == table_pb2.MatchOutcome.State.STATE_CLOSED:
        assert match.winner_id == match.top_id, (match, outcome)
    else:
        assert outcome.winner_id == match.winner_id, (match, outcome)


async def test_a_wagered_sit_and_go_survives_kill_9_of_the_director_wallet_table_and_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BG_CLOCK_SCALE", "0.05")
    monkeypatch.setenv("BG_LOG_LEVEL", "WARNING")
    data = tmp_path / "data"
    log = (tmp_path / "cluster.log").open("w")
    cluster = Cluster(ClusterConfig(replicas={"table": 2}, data_dir=data, base_port=0), log)
    await cluster.start()
    gateway = next(i.address for i in cluster.instances if i.service == "gateway")
    wallet = next(i.address for i in cluster.instances if i.service == "wallet")
    identity = next(i.address for i in cluster.instances if i.service == "identity")
    table_address = next(i.address for i in cluster.instances if i.service == "table")
    tasks: list[asyncio.Task[None]] = []
    try:
        async with grpc.aio.insecure_channel(identity) as ch:
            admin = admin_pb2_grpc.AdminServiceStub(ch)
            login = await admin.OperatorLogin(
                admin_pb2.OperatorLoginRequest(name="admin", key=cluster.operator_key)
            )
            made = await admin.CreateTournament(
                matchmaking_pb2.CreateTournamentRequest(
                    name="Chaos cup", kind="sit_and_go", size=8,
                    options=table_pb2.TableOptions(
                        profile="wagered", match_length=5, bet=BUY_IN
                    ),
                ),
                metadata=[("authorization", f"Bearer {login.token}")],
            )  # fmt: skip
        channels = [grpc.aio.insecure_channel(gateway, options=OPTIONS) for _ in range(8)]
        tag = uuid.uuid4().hex[:4]
        players = [Player(c, f"k{tag}{i}", seed=i) for i, c in enumerate(channels)]
        for p in players:
            await p.login()
            await fund(wallet, cluster.operator_token, p.player_id)
            await p.rpc(
                p.stub.RegisterTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=made.tournament_id),
            )
        tasks = [asyncio.create_task(compete(p, made.tournament_id)) for p in players]
        faults = []
        for name in FAULTS:
            await asyncio.sleep(0.5)
            asked = matchmaking_pb2.TournamentRequest(tournament_id=made.tournament_id)
            playing: list[int] = []
            for _ in range(100):  # kill while a match of the bracket is in play, not between rounds
                seen = await retried(  # the last fault's restart may still be healing
                    lambda a=asked: players[0].rpc(players[0].stub.GetTournament, a),
                    time.monotonic() + 30,
                )
                playing = sorted({m.round for m in seen.matches if m.table_id and not m.winner_id})
                if playing or seen.status == "finished":
                    break
                await asyncio.sleep(0.1)
            dead = _pid_of(cluster, name)
            os.kill(dead, signal.SIGKILL)
            back = await _await_back(data, name, dead, time.monotonic() + 90)
            faults.append({"killed": name, "rounds_in_play": playing, "downtime_s": round(back, 1)})
        # Each kill landed mid-round (a match of the bracket in play), not between tournaments.
        assert all(f["rounds_in_play"] for f in faults), faults
        await asyncio.wait_for(asyncio.gather(*tasks), 300)

        asked = matchmaking_pb2.TournamentRequest(tournament_id=made.tournament_id)
        # The prizes follow the final once the wallet answers (its kill was the last fault).
        final = await awaited(
            lambda: players[0].rpc(players[0].stub.GetTournament, asked),
            settled,
            time.monotonic() + 60,
        )
        assert final.status == "finished"
        assert sorted(final.field) == sorted(p.player_id for p in players)  # nobody lost
        assert sorted(r.rank for r in final.ranks) == [1, 2, 3, 3, 5, 5, 5, 5]
        played = [m for m in final.matches if m.top_id and m.bottom_id]
        assert len(played) == 7 and all(m.winner_id in (m.top_id, m.bottom_id) for m in played)
        # Each pairing dealt once: one lobby table, one match on it, that match decided.
        client = redis_asyncio.Redis.from_url(cluster.redis_url)
        try:
            tables = table_pb2_grpc.TableServiceStub(grpc.aio.insecure_channel(table_address))
            for m in played:
                doc = await client.get(lobby_key(m.table_id))
                assert doc is not None and b'"matches": 1' in doc
                outcome = await tables.GetMatchOutcome(
                    table_pb2.GetMatchOutcomeRequest(
                        table_id=m.table_id, match_id=f"{m.table_id}-1"
                    )
                )
                decided_as(outcome, m)
            dealt = [
                k for k in await client.keys(lobby_key("*"))
                if made.tournament_id.encode() in (await client.get(k) or b"")
            ]  # fmt: skip
            assert len(dealt) == 7  # no second table for any pairing
        finally:
            await client.aclose()
        # The money, to the diamond: the pool captured once and paid once, 70/30 of 736.
        prizes = {x.player_id: x.amount for x in final.prizes}
        champion, finalist = (next(r.player_id for r in final.ranks if r.rank == n) for n in (1, 2))
        assert (final.money, prizes) == ("paid", {champion: 516, finalist: 220})
        books = f"sqlite+aiosqlite:///{data / 'wallet.db'}"
        kinds, balances, problems = await _ledger(books, [p.player_id for p in players])
        assert kinds == {"hold_buyin": 8, "start_pool": 1, "pay_prizes": 1}, kinds
        assert balances == {
            p.player_id: FUNDS - BUY_IN + prizes.get(p.player_id, 0) for p in players
        }
        assert problems == []
        # The result reached the leaderboard once, whatever died on the way.
        top = leaderboard_pb2.TopRequest(board="tournaments", key="all", limit=10)
        until = time.monotonic() + 30
        while True:
            board = await retried(
                lambda: players[0].rpc(players[0].stub.GetLeaderboard, top), until
            )
            if board.entries or time.monotonic() > until:
                break
            await asyncio.sleep(0.5)
        assert [(e.player_id, e.score) for e in board.entries] == [(champion, 1.0)]
        print({"faults": faults})
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await cluster.stop()
        log.close()
