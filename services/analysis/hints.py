"""Hints (issue 28, requirement 4): the best plays of the caller's roll with their equities,
from the evaluator and the caller's own view only (nothing hidden reaches it), where the rules
allow help: a table against a computer seat (Play vs CPU, casual or scored) and scored test
games (I-19). Never in wagered or rated play, never for a spectator.

Asked by the gateway's GetHint (AnalysisService.Hint): the evaluator lives in this service, so
a hint's CPU (median ~24 ms, up to ~200 ms in a contact position, measured) never holds the
gateway's event loop and its streams (issue 62, item 3). The evaluation runs in a worker thread,
once per view: asking again before the table moves on answers from `Hints`' memory, so a player
pressing Hint repeatedly costs one evaluation per turn, whatever the rate limits let through."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from bg.analysis.v1 import analysis_pb2
from bg.table.v1 import table_pb2
from engine.movegen import format_steps
from engine.position import Position
from engine.profiles import CPU_LEVELS
from engine.vocabulary import Phase
from evaluator.evaluate import RankedPlay, default
from services.common.errors import PermissionDenied, ServiceError
from services.contracts.bounds import HINT_MAX, hint_plays
from services.contracts.vocabulary import from_proto

MAX_PLAYS = HINT_MAX
REMEMBERED = 2048  # hints kept, by (table, seq, seat)


def allowed(options: table_pb2.TableOptions) -> bool:
    """Help is for practice: against the computer, or a scored test game; never for money or
    a rating."""
    if options.profile == "wagered" or options.rated:
        return False
    return options.level in CPU_LEVELS or (options.profile == "scored" and options.test_game)


def hint(view: table_pb2.TableView, limit: int) -> analysis_pb2.HintAnswer:
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
    # Every play a hint may list looked at one roll deeper, so each listed play's equity and
    # chances come from the same evaluation, best first (issue 41, item 8).
    ranked = default().rank_plays_1ply(
        start, (view.dice[0], view.dice[1]), keep=MAX_PLAYS, window=float("inf")
    )
    count = hint_plays(limit)
    return analysis_pb2.HintAnswer(plays=[_play(start, r) for r in ranked[:count]], seq=view.seq)


class Hints:
    def __init__(self, remembered: int = REMEMBERED) -> None:
        self.remembered = remembered
        self._known: OrderedDict[tuple[str, int, int], analysis_pb2.HintAnswer] = OrderedDict()

    async def for_view(self, view: table_pb2.TableView, limit: int) -> analysis_pb2.HintAnswer:
        count = hint_plays(limit)
        key = (view.table_id, view.seq, view.seat)
        found = self._known.get(key)
        if found is None:
            found = await asyncio.to_thread(hint, view, MAX_PLAYS)
            self._known[key] = found
            while len(self._known) > self.remembered:
                self._known.popitem(last=False)
        return analysis_pb2.HintAnswer(plays=found.plays[:count], seq=found.seq)


def _play(start: Position, ranked: RankedPlay) -> analysis_pb2.HintedPlay:
    out = analysis_pb2.HintedPlay(
        notation=format_steps(start, ranked.play.steps),
        equity=round(ranked.equity, 4),
        probabilities=[round(float(p), 4) for p in ranked.probabilities],
    )
    for frm, to in ranked.play.steps:
        out.steps.add(**{"from": frm, "to": to})
    return out
