"""Issue 29, tournaments, on the running cluster: an operator opens a sit-and-go of 8 and a
scheduled knockout that 5 enter (3 byes) through the admin API (audited); guests register
through the gateway and scripted clients play every match they are seated at, to the champions.
Each pairing is one match; the ranks are the bracket's."""

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
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.player import Player
from client.tournament import done_with, next_match
from tests.helpers import error_of

pytestmark = pytest.mark.e2e
SCORED = table_pb2.TableOptions(profile="scored", match_length=1)
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


async def test_a_sit_and_go_of_eight_and_a_scheduled_field_of_five_play_to_their_champions(
    cluster: dict[str, Any],
) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        admin = admin_pb2_grpc.AdminServiceStub(ch)
        login = await admin.OperatorLogin(
            admin_pb2.OperatorLoginRequest(
                name=cluster["admin"]["name"], key=cluster["admin"]["key"]
            )
        )
        operator = [("authorization", f"Bearer {login.token}")]
        sng = await admin.CreateTournament(
            matchmaking_pb2.CreateTournamentRequest(
                name="Eight", kind="sit_and_go", options=SCORED, size=8, request_id="sng-8"
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
    bad = cli("admin", "tournament-create", "Odd", "--size", "6")
    assert bad.returncode == 1 and "INVALID_SIZE" in bad.stderr
    cancelled = cli("admin", "tournament-cancel", created["tournament_id"], "--reason", "test")
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["status"] == "cancelled"
