"""Issue 41, item 4 (RULES.md I-41): a seated player who never opens a Play stream to a dealt
match is away from the deal and loses by the profile's away rule, on the real cluster (clocks
x 0.05): wagered after 60 s (3 s here, with the pot paid to the one who came), scored after
3 minutes (I-18), a casual table nobody joins closes after 10 minutes (W-2), and in a
tournament the no-show loses its match, wagered or casual (W-5), so the bracket ends with the
player who came as its champion. Nobody sends a command: only the clock acts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import pytest

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.events.v1 import events_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.play_wire import PlaySession, phase_of, reason_of
from client.player import Player
from tests.cluster.test_gateway import _balances_settle, _players

pytestmark = pytest.mark.e2e


def _away_at_deal(events: list[events_pb2.TableEvent], seat: int) -> events_pb2.PlayerAway:
    """The no-show's player_away among the match's first events (before any roll)."""
    kinds = [e.WhichOneof("body") for e in events]
    first_roll = next((i for i, k in enumerate(kinds) if k == "dice_rolled"), len(kinds))
    away = [e.player_away for e in events[:first_roll] if e.WhichOneof("body") == "player_away"]
    found = [a for a in away if a.seat == seat]
    assert found, kinds
    return found[0]


async def _came_and_waited(player: Player, table_id: str, budget_s: float) -> Any:
    """The player who came: a stream open, no command sent, until the table ends."""
    async with PlaySession(player.stub, table_id, player.auth) as session:
        view = await session.wait_for(lambda v: phase_of(v) in ("match_over", "closed"), budget_s)
        return view, list(session.events)


async def _a_no_show_loses_on_the_away_clock(
    cluster: dict[str, Any], options: table_pb2.TableOptions, window_s: float
) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        came, absent = await _players(cluster, ch, "came", "absent")
        table = await came.create_table(options)
        await absent.join(table.code)  # seated, dealt, and never opens the table
        started = time.monotonic()
        view, events = await _came_and_waited(came, table.table_id, 60)
        assert phase_of(view) == "match_over" and reason_of(view) == "away"
        assert view.winner == view.seat  # the one who came
        away = _away_at_deal(events, 1 - view.seat)
        assert away.deadline_ms > 0
        ended = next(e for e in events if e.WhichOneof("body") == "match_ended")
        # Not a moment early (I-40's reference being the table's clock): at or after the window.
        assert ended.at_ms >= away.deadline_ms
        assert time.monotonic() - started >= window_s - 1.0
        if options.profile == "wagered":  # I-6 and I-11: the pot less the fees to the winner
            settled = await _balances_settle(
                [came, absent], {came.player_id: 5084, absent.player_id: 4900}
            )
            assert settled == {came.player_id: 5084, absent.player_id: 4900}
        else:  # I-18: leaving in a one-game match is a loss
            assert list(ended.match_ended.scored_points)[1 - view.seat] == -1


async def _a_casual_table_nobody_opens_closes_and_leaves_the_lists(
    cluster: dict[str, Any],
) -> None:
    """W-2 with I-41: dealt, never opened by either player: closed with no winner after 10
    minutes (30 s here), and never listed as a match in play meanwhile (item 19)."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        host, guest, cam = await _players(cluster, ch, "host", "guest", "cam", grant=0)
        table = await host.create_table(table_pb2.TableOptions(profile="casual"), public=True)
        await guest.join(table.code)
        await host.stub.StartTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=host.auth
        )
        live = await cam.stub.ListTables(
            matchmaking_pb2.ListTablesRequest(live=True), metadata=cam.auth
        )
        assert table.table_id not in [t.table_id for t in live.tables]
        for _ in range(900):
            view = await host.view(table.table_id)
            if phase_of(view) == "closed":
                break
            await asyncio.sleep(0.1)
        assert (phase_of(view), reason_of(view)) == ("closed", "both_away")
        mine = await host.stub.ListTables(
            matchmaking_pb2.ListTablesRequest(mine=True), metadata=host.auth
        )
        assert table.table_id not in [t.table_id for t in mine.tables]


async def _a_tournaments_no_show_loses_and_the_one_who_came_is_champion(
    cluster: dict[str, Any], options: table_pb2.TableOptions
) -> None:
    """A scheduled knockout of two: one registered player never opens the final. The no-show
    loses it on the away clock (wagered 60 s, I-9; casual 10 minutes, W-5), and the player who
    came is the champion (with the pool less the fee, wagered: 184)."""
    async with (
        grpc.aio.insecure_channel(cluster["gateway"]) as ch,
        grpc.aio.insecure_channel(cluster["identity"]) as ops,
    ):
        came, absent = await _players(cluster, ch, "came", "absent", grant=1000)
        admin = admin_pb2_grpc.AdminServiceStub(ops)
        login = await admin.OperatorLogin(
            admin_pb2.OperatorLoginRequest(
                name=cluster["admin"]["name"], key=cluster["admin"]["key"]
            )
        )
        made = await admin.CreateTournament(
            matchmaking_pb2.CreateTournamentRequest(
                name=f"No-show {options.profile}", kind="scheduled", size=2, options=options,
                starts_ms=int(time.time() * 1000) + 3000,
            ),
            metadata=[("authorization", f"Bearer {login.token}")],
        )  # fmt: skip
        asked = matchmaking_pb2.TournamentRequest(tournament_id=made.tournament_id)
        for p in (came, absent):
            await p.rpc(p.stub.RegisterTournament, asked)
        for _ in range(300):
            found = await came.rpc(came.stub.GetTournament, asked)
            final = next((m for m in found.matches if m.table_id), None)
            if final is not None:
                break
            await asyncio.sleep(0.1)
        assert final is not None
        view, events = await _came_and_waited(came, final.table_id, 90)
        assert (phase_of(view), reason_of(view), view.winner) == ("match_over", "away", view.seat)
        _away_at_deal(events, 1 - view.seat)
        for _ in range(300):
            found = await came.rpc(came.stub.GetTournament, asked)
            if found.status == "finished" and found.money in ("", "paid"):
                break
            await asyncio.sleep(0.1)
        ranks = {r.player_id: r.rank for r in found.ranks}
        assert (found.status, ranks) == ("finished", {came.player_id: 1, absent.player_id: 2})
        if options.profile == "wagered":
            assert {p.player_id: p.amount for p in found.prizes} == {came.player_id: 184}
            settled = await _balances_settle(
                [came, absent], {came.player_id: 1084, absent.player_id: 900}
            )
            assert settled == {came.player_id: 1084, absent.player_id: 900}


async def test_a_no_show_loses_by_each_profiles_away_rule(cluster: dict[str, Any]) -> None:
    """Every case at once (each waits on the clock, the casual ones 30 s): a wagered and a
    scored no-show, a casual table nobody opens, and a wagered and a casual tournament's."""
    wagered = table_pb2.TableOptions(profile="wagered", match_length=1, bet=100)
    scored = table_pb2.TableOptions(profile="scored", match_length=1, move_time_s=600)
    await asyncio.gather(
        _a_no_show_loses_on_the_away_clock(cluster, wagered, 3.0),
        _a_no_show_loses_on_the_away_clock(cluster, scored, 9.0),
        _a_casual_table_nobody_opens_closes_and_leaves_the_lists(cluster),
        _a_tournaments_no_show_loses_and_the_one_who_came_is_champion(
            cluster, table_pb2.TableOptions(profile="wagered", match_length=3, bet=100)
        ),
        _a_tournaments_no_show_loses_and_the_one_who_came_is_champion(
            cluster, table_pb2.TableOptions(profile="casual", match_length=1)
        ),
    )
