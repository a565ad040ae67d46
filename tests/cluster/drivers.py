"""The fault tests' players (chaos, partitions, tournament faults): table after table, or a
tournament's bracket, played to the end from pushed views through whatever the faults do. A
failed call or a broken stream is tried again, as a client would; `failed` hears of each (with
the table it was for), and `tables` learns every table dealt (id -> profile)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import grpc

from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.player import Player
from client.tournament import done_with, next_match
from services.contracts.vocabulary import FINISHED

Failed = Callable[[str], None]


def _ignore(_table_id: str) -> None:
    return None


async def play_tables(
    pair: Sequence[Player],
    profile: str,
    bet: int,
    stop: asyncio.Event,
    tables: dict[str, str],
    failed: Failed = _ignore,
) -> None:
    """Table after table until `stop`: create, join (a casual host starts it), play both
    seats to the end; a table that cannot go on is left to its clocks."""
    a, b = pair
    while not stop.is_set():
        table_id = ""
        try:
            opts = table_pb2.TableOptions(profile=profile, match_length=1)
            if profile == "wagered":
                opts.bet = bet
            table = await a.create_table(opts)
            table_id = str(table.table_id)
            tables[table_id] = profile
            await b.join(table.code)
            if profile == "casual":
                await a.rpc(a.stub.StartTable, matchmaking_pb2.TableRequest(table_id=table_id))
            until = time.monotonic() + 60
            for player in pair:
                player.session = None
            await asyncio.gather(*(play_on(p, table_id, until, failed) for p in pair))
        except Exception:
            failed(table_id)
            await asyncio.sleep(0.5)


async def play_on(player: Player, table_id: str, until: float, failed: Failed = _ignore) -> None:
    """One seat to the match's end (or `until`), resuming on a new stream after a break."""
    while time.monotonic() < until:
        try:
            view = await player.play(table_id, timeout_s=max(1.0, until - time.monotonic()))
            if view.phase in FINISHED:
                return
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED):
                return  # the deal was undone: no match here
            failed(table_id)
            await asyncio.sleep(0.5)
        except Exception:  # a stream the fault broke: resume on a new one
            failed(table_id)
            await asyncio.sleep(0.5)


async def compete(
    p: Player,
    tournament_id: str,
    limit_s: float = 300,
    tables: dict[str, str] | None = None,
) -> None:
    """Each match the bracket seats the player at, until out or the tournament is over."""
    request = matchmaking_pb2.TournamentRequest(tournament_id=tournament_id)
    done: set[str] = set()
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            found = await p.rpc(p.stub.GetTournament, request)
            if done_with(found, p.player_id):
                return
            match = next_match(found, p.player_id, done)
            if match is None:
                await asyncio.sleep(0.3)
                continue
            if tables is not None:
                tables.setdefault(match.table_id, "tournament")
            view = await p.play(match.table_id, 60)
            if view.phase in FINISHED:
                done.add(match.table_id)
        except Exception:  # a fault broke a call or the stream: look again
            await asyncio.sleep(0.5)
    raise AssertionError(f"{p.name}: the tournament did not end")
