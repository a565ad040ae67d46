"""Hints (issue 28, requirement 4): the best plays of the caller's roll with their equities,
from the evaluator and the caller's own view only (nothing hidden reaches it), where the rules
allow help: a table against a computer seat (Play vs CPU, casual or scored) and scored test
games (I-19). Never in wagered or rated play, never for a spectator.

The evaluation (a few ms to tens of ms) runs in a worker thread, so the gateway's event loop
keeps serving every other stream meanwhile."""

from __future__ import annotations

import asyncio

from bg.gateway.v1 import gateway_pb2
from bg.table.v1 import table_pb2
from engine.movegen import format_steps
from engine.position import Position
from engine.profiles import CPU_LEVELS
from engine.vocabulary import Phase
from evaluator.evaluate import RankedPlay, default
from services.common.errors import PermissionDenied, ServiceError
from services.contracts.vocabulary import from_proto

MAX_PLAYS = 10


def allowed(options: table_pb2.TableOptions) -> bool:
    """Help is for practice: against the computer, or a scored test game; never for money or
    a rating."""
    if options.profile == "wagered" or options.rated:
        return False
    return options.level in CPU_LEVELS or (options.profile == "scored" and options.test_game)


def hint(view: table_pb2.TableView, limit: int) -> gateway_pb2.HintResponse:
    """The hint for the caller's `view` (their own seat's), or a typed refusal."""
    if view.spectator or not allowed(view.options):
        raise PermissionDenied(
            "HINT_NOT_ALLOWED",
            "hints are for Play vs CPU and scored test games, never wagered or rated play",
        )
    moving = from_proto(view.phase, Phase) is Phase.MOVING
    if not moving or view.decider != view.seat or len(view.dice) != 2 or view.steps:
        raise ServiceError("HINT_NOT_NOW", "a hint is for the start of your move, dice rolled")
    start = Position(tuple(view.own), tuple(view.opponent))
    ranked = default().rank_plays_1ply(start, (view.dice[0], view.dice[1]))
    count = MAX_PLAYS if limit > MAX_PLAYS else limit or 3
    return gateway_pb2.HintResponse(plays=[_play(start, r) for r in ranked[:count]], seq=view.seq)


async def hint_off_loop(view: table_pb2.TableView, limit: int) -> gateway_pb2.HintResponse:
    return await asyncio.to_thread(hint, view, limit)


def _play(start: Position, ranked: RankedPlay) -> gateway_pb2.HintPlay:
    out = gateway_pb2.HintPlay(
        notation=format_steps(start, ranked.play.steps),
        equity=round(ranked.equity, 4),
        probabilities=[round(float(p), 4) for p in ranked.probabilities],
    )
    for frm, to in ranked.play.steps:
        out.steps.add(**{"from": frm, "to": to})
    return out
