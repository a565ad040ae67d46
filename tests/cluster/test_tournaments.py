"""Issue 29, tournaments, on the running cluster: an operator opens a wagered sit-and-go of 8
(a buy-in of 100) and a scored scheduled knockout that 5 enter (3 byes) through the admin API
(audited); guests register through the gateway and scripted clients play every match they are
seated at, to the champions. Each pairing is one match; the ranks are the bracket's; the pool
less 8% is paid 70/30 to the diamond; both results reach the leaderboard's tournament board."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.player import Player
from client.tournament import done_with, next_match, settled
from tests.cluster.contract_clients import fund
from tests.helpers import awaited, error_of

pytestmark = pytest.mark.e2e
SCORED = table_pb2.TableOptions(profile="scored", match_length=1)
WAGERED = table_pb2.TableOptions(profile="wagered", match_length=1, bet=100)
FUNDS = 1000
BIN = Path(sys.executable).parent


async def _compete(p: Player, tournament_id: str) -> matchmaking_pb2.Tournament:
    """Play every match of `tournament_id` the player is seated at, until out or over."""
    played: set[str] = set()
    request = matchmaking_pb2.TournamentRequest(tournament_id=tournament_id)
    end = time.monotonic() + 400
    while time.monotonic() < end:
        found: matchmaking_pb2.Tournament = await p.rpc(p.stub.GetTournament, request)
        if done_with(found, p.player_id):
            return found
        match = next_match(found, p.player_id, played)
        if match is not None:
            await p.play(match.table_id, 240)
            played.add(match.table_id)
        else:
            await asyncio.sleep(0.3)
    raise AssertionError(f"{p.name}: the tournament did not end")


async def test_a_wagered_sit_and_go_of_eight_and_a_scheduled_field_of_five_play_to_their_champions(
    cluster: dict[str, Any],
) -> None:
    async with (
        grpc.aio.insecure_channel(cluster["gateway"]) as ch,
        grpc.aio.insecure_channel(cluster["identity"]) as ops,
    ):
        admin = admin_pb2_grpc.AdminServiceStub(ops)
        login = await admin.OperatorLogin(
            admin_pb2.OperatorLoginRequest(
                name=cluster["admin"]["name"], key=cluster["admin"]["key"]
            )
        )
        operator = [("authorization", f"Bearer {login.token}")]
        sng = await admin.CreateTournament(
            matchmaking_pb2.CreateTournamentRequest(
                name="Eight", kind="sit_and_go", options=WAGERED, size=8, request_id="sng-8"
            ),
            metadata=operator,
        )
        starts = int(time.time() * 1000) + 4000
        scheduled = await admin.CreateTournament(
            matchmaking_pb2.CreateTournamentRequest(
                name="Five", kind="scheduled", options=SCORED, size=16, starts_ms=starts,
                lengths=[1],
            ),
            metadata=operator,
        )  # fmt: skip
        players = [Player(ch, f"tn{i}", seed=i) for i in range(13)]
        for p in players:
            await p.login()
        eight, five = players[:8], players[8:]
        for p in eight:
            await fund(cluster, p.player_id, FUNDS)
        for p in eight:
            await p.rpc(
                p.stub.RegisterTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=sng.tournament_id),
            )
        for p in five:
            await p.rpc(
                p.stub.RegisterTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=scheduled.tournament_id),
            )
        # One unfinished tournament at a time; a player's token is no operator's.
        with pytest.raises(grpc.aio.AioRpcError) as elsewhere:
            await five[0].rpc(
                five[0].stub.RegisterTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=sng.tournament_id),
            )
        assert error_of(elsewhere.value).code in ("TOURNAMENT_ELSEWHERE", "TOURNAMENT_CLOSED")
        with pytest.raises(grpc.aio.AioRpcError) as not_operator:
            await admin.CancelTournament(
                matchmaking_pb2.CancelTournamentRequest(
                    tournament_id=sng.tournament_id, reason="x"
                ),
                metadata=eight[0].auth,
            )
        assert not_operator.value.code() == grpc.StatusCode.PERMISSION_DENIED

        results = await asyncio.gather(
            *(_compete(p, sng.tournament_id) for p in eight),
            *(_compete(p, scheduled.tournament_id) for p in five),
        )
        for tournament, field in ((sng, eight), (scheduled, five)):
            final = await field[0].rpc(
                field[0].stub.GetTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=tournament.tournament_id),
            )
            assert final.status == "finished"
            played = [m for m in final.matches if m.top_id and m.bottom_id]
            assert len(played) == len(field) - 1  # each pairing one match
            assert len({m.table_id for m in played}) == len(played)
            ranks = sorted(r.rank for r in final.ranks)
            assert ranks == ([1, 2, 3, 3, 5, 5, 5, 5] if len(field) == 8 else [1, 2, 3, 3, 5])
            champion = next(r.player_id for r in final.ranks if r.rank == 1)
            last = next(m for m in final.matches if m.round == final.rounds)
            assert last.winner_id == champion
        # Every player stopped as the bracket says: the champions at the end, the others
        # once ranked.
        for p, seen in zip(players, results, strict=True):
            assert seen.status == "finished" or any(
                r.player_id == p.player_id and r.rank > 1 for r in seen.ranks
            )
        listed = await eight[0].rpc(
            eight[0].stub.ListTournaments, matchmaking_pb2.ListTournamentsRequest(status="finished")
        )
        assert {sng.tournament_id, scheduled.tournament_id} <= {
            t.tournament_id for t in listed.tournaments
        }
        audit = await admin.ListAudit(admin_pb2.ListAuditRequest(limit=20), metadata=operator)
        assert {"tournament_create", "tournament_cancel"} <= {e.action for e in audit.entries}
        # The wagered pool: 8 x 100, 64 to the house, 736 paid 70/30 (the rounding to the
        # champion), every other player 100 down: to the diamond, once.
        paid = await awaited(  # the prizes follow the final on the director's pass
            lambda: eight[0].rpc(
                eight[0].stub.GetTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=sng.tournament_id),
            ),
            settled,
            time.monotonic() + 30,
        )
        placed = {r.player_id: r.rank for r in paid.ranks}
        champion, finalist = (next(p for p, r in placed.items() if r == n) for n in (1, 2))
        assert (paid.money, paid.prize_money, paid.fee) == ("paid", 736, 64)
        assert {x.player_id: x.amount for x in paid.prizes} == {champion: 516, finalist: 220}
        won = {champion: 516, finalist: 220}
        for p in eight:
            balance = await p.rpc(p.stub.GetBalance, gateway_pb2.BalanceRequest())
            assert balance.balance == FUNDS - 100 + won.get(p.player_id, 0), p.player_id
        # Both champions' wins reach the leaderboard (tournament-events).
        champions = {
            next(r.player_id for r in t.ranks if r.rank == 1)
            for t in (paid, await five[0].rpc(
                five[0].stub.GetTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=scheduled.tournament_id),
            ))
        }  # fmt: skip
        board: set[str] = set()
        until = time.monotonic() + 60
        while not champions <= board and time.monotonic() < until:
            top = await eight[0].rpc(
                eight[0].stub.GetLeaderboard,
                leaderboard_pb2.TopRequest(board="tournaments", key="all", limit=100),
            )
            board = {e.player_id for e in top.entries}
            await asyncio.sleep(0.5)
        assert champions <= board
        profile = await eight[0].rpc(
            eight[0].stub.GetProfile, leaderboard_pb2.ProfileRequest(player_id=champion)
        )
        assert profile.tournament_wins >= 1 and profile.season_tournament_wins >= 1


def test_operators_open_and_cancel_a_tournament_and_players_list_it_from_the_terminal(
    cluster: dict[str, Any],
) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BIN / "bgcluster", *args[:1], "--data-dir", cluster["data"], *args[1:]],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    made = cli("admin", "tournament-create", "Terminal cup", "--size", "4", "--lengths", "1,3")
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    assert (created["status"], created["size"], created["lengths"]) == ("registering", 4, [1, 3])
    listed = cli("play", "--tournament", "list", "--name", "lister")
    assert listed.returncode == 0, listed.stderr
    assert any(
        line.startswith(created["tournament_id"])
        and "registering" in line
        and "Terminal cup" in line
        for line in listed.stdout.splitlines()
    )
    wagered = cli(
        "admin", "tournament-create", "Diamond cup", "--profile", "wagered", "--buy-in", "200",
        "--size", "4",
    )  # fmt: skip
    assert wagered.returncode == 0, wagered.stderr
    made_wagered = json.loads(wagered.stdout)
    assert (made_wagered["buy_in"], made_wagered["money"]) == ("200", "open")
    listed = cli("play", "--tournament", "list", "--name", "lister")
    assert any(
        line.startswith(made_wagered["tournament_id"]) and line.endswith("buy-in 200")
        for line in listed.stdout.splitlines()
    )
    unbet = cli("admin", "tournament-create", "No bet", "--profile", "wagered", "--size", "4")
    assert unbet.returncode == 1 and "INVALID_OPTION" in unbet.stderr
    cli("admin", "tournament-cancel", made_wagered["tournament_id"], "--reason", "test")
    bad = cli("admin", "tournament-create", "Odd", "--size", "6")
    assert bad.returncode == 1 and "INVALID_SIZE" in bad.stderr
    cancelled = cli("admin", "tournament-cancel", created["tournament_id"], "--reason", "test")
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["status"] == "cancelled"
