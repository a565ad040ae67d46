"""A finished match's archived move list (the table service's RECORD_KINDS, as in MatchEnded and
MatchClosed) turned into what evaluator/analysis.py judges: games of turns and cube actions,
each from the acting seat, with the index in the move list of the event each action came from
(so a decision points at the move a replay shows).

What is not the player's decision is left out: a double withdrawn because the doubler could not
cover (I-4), a drop forced on a taker who cannot cover or by the answer's clock (I-2; the double
stays the doubler's decision), a play the server made when the turn's clock ran out (applied to
the board, not judged); a turn taken back in a scored test game (I-19) is removed, as the table
removed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bg.events.v1 import events_pb2
from evaluator.analysis import CubeAction, Game, Turn

CLOCK_PLAYS = (events_pb2.DEADLINE_KIND_TURN, events_pb2.DEADLINE_KIND_MOVE_TIME)
FORCED_DROPS = (events_pb2.DROP_REASON_CANNOT_COVER, events_pb2.DROP_REASON_TIMEOUT)


@dataclass
class _Open:
    score: tuple[int, int]
    crawford: bool
    actions: list[Turn | CubeAction] = field(default_factory=list)
    moves: list[int] = field(default_factory=list)  # per action, its index in the move list
    dice: list[tuple[int, int] | None] = field(default_factory=lambda: [None, None])
    clock_plays: list[bool] = field(default_factory=lambda: [False, False])  # by seat
    rolled_ms: list[int] = field(default_factory=lambda: [0, 0])  # by seat: the roll's time


@dataclass(frozen=True)
class Record:
    games: tuple[Game, ...]
    move_index: tuple[tuple[int, ...], ...]  # per game, per action: the move list's index


def record_of(moves: Sequence[events_pb2.TableEvent]) -> Record:
    games: list[_Open] = []
    game: _Open | None = None
    for index, ev in enumerate(moves):
        kind = ev.WhichOneof("body")
        body: Any = getattr(ev, kind) if kind else None
        if kind == "game_started":
            score = ([*list(body.score), 0, 0])[:2]
            game = _Open((score[0], score[1]), body.crawford)
            games.append(game)
        elif game is None:
            continue
        elif kind == "opening_roll" and body.starter in (0, 1):
            game.dice[body.starter] = (body.dice[body.starter], body.dice[1 - body.starter])
            game.rolled_ms[body.starter] = ev.at_ms
        elif kind == "dice_rolled":
            game.dice[body.seat] = (body.dice[0], body.dice[1])
            game.rolled_ms[body.seat] = ev.at_ms
        elif kind in ("turn_ended", "turn_passed"):
            dice = game.dice[body.seat]
            game.dice[body.seat] = None
            if dice is None:
                continue  # a pass before any roll (a timeout with nothing rolled): no play
            steps = (
                tuple((getattr(s, "from"), s.to) for s in body.steps)
                if kind == "turn_ended"
                else ()
            )
            judged = not game.clock_plays[body.seat]
            game.clock_plays[body.seat] = False
            # The time to decide: from the roll (the first, when a turn was taken back) to the play.
            rolled = game.rolled_ms[body.seat]
            think = max(0, ev.at_ms - rolled) if rolled and ev.at_ms else 0
            _add(game, Turn(body.seat, dice, steps, judged, think), index)
        elif kind == "timed_out" and body.clock in CLOCK_PLAYS:
            game.clock_plays[body.seat] = True  # the turn's play that follows is the server's
        elif kind == "turn_taken_back":
            _take_back(game, body.seat)
        elif kind == "double_offered":
            _add(game, CubeAction(body.seat, "double"), index)
        elif kind == "double_withdrawn":
            _drop_last_double(game)
        elif kind == "double_taken":
            _add(game, CubeAction(body.seat, "take"), index)
        elif kind == "double_dropped" and body.reason not in FORCED_DROPS:
            _add(game, CubeAction(body.seat, "drop"), index)  # (a forced one: the double stays)
    return Record(
        tuple(Game(g.score, g.crawford, tuple(g.actions)) for g in games),
        tuple(tuple(g.moves) for g in games),
    )


def match_length(end: events_pb2.TableEvent) -> int:
    body: Any = getattr(end, end.WhichOneof("body") or "", None)
    return int(body.info.match_length) if body is not None and body.info.match_length else 1


def _add(game: _Open, action: Turn | CubeAction, index: int) -> None:
    game.actions.append(action)
    game.moves.append(index)


def _take_back(game: _Open, seat: int) -> None:
    """The seat's last turn undone: its dice are its own again (the turn is played anew)."""
    for i in range(len(game.actions) - 1, -1, -1):
        action = game.actions[i]
        if isinstance(action, Turn) and action.seat == seat:
            del game.actions[i], game.moves[i]
            game.dice[seat] = action.dice
            return


def _drop_last_double(game: _Open) -> None:
    if (
        game.actions
        and isinstance(game.actions[-1], CubeAction)
        and game.actions[-1].action == "double"
    ):
        game.actions.pop()
        game.moves.pop()
