"""What one player may see of a table: board, dice, cube, clocks and, on their turn, the
movable checkers and lit points. Built from `MatchState` only, never from the secret part."""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.machine import PendingDeadline, may_double, next_deadline
from engine.position import pip_count
from engine.state import MatchState, Phase
from engine.vocabulary import DeadlineKind, EndReason, GameResult

_CLOCKED = (Phase.AWAIT_ROLL, Phase.MOVING, Phase.DOUBLE_OFFERED)  # a seat acts on a clock


@dataclass(frozen=True, slots=True)
class PlayerView:
    seat: int
    phase: Phase
    turn: int
    decider: int
    game_no: int
    match_length: int
    score: tuple[int, int]  # by seat
    crawford: bool
    position_id: str  # gnubg position ID with this seat as the player on roll
    own: tuple[int, ...]  # this seat's checkers, points 1..24 then the bar, from its side
    opponent: tuple[int, ...]
    pips: tuple[int, int]  # (own, opponent)
    dice: tuple[int, int] | None
    steps: tuple[tuple[int, int], ...]  # single steps played so far this turn
    cube: int
    cube_owner: int
    can_double: bool
    can_confirm: bool
    deadline_ms: int | None
    deadline_kind: DeadlineKind | None
    clock_ms: int | None  # the deciding seat's clock (turn, answer or move time), if one runs
    movable: tuple[int, ...]
    lit: dict[int, tuple[int, ...]]
    boosts_left: int
    auto_roll: bool
    away: tuple[bool, bool]
    fingerprint: str
    winner: int | None
    end_reason: EndReason | None
    rematch_offered_by: int | None
    rematch_agreed: bool
    last_result: GameResult | None = None  # how the last finished game was won


def player_view(m: MatchState, seat: int) -> PlayerView:
    return _view(m, seat, next_deadline(m))


def player_views(m: MatchState, due: PendingDeadline | None) -> tuple[PlayerView, PlayerView]:
    """Both seats' views, given the match's next deadline (a commit has it already)."""
    return _view(m, 0, due), _view(m, 1, due)


def _view(m: MatchState, seat: int, due: PendingDeadline | None) -> PlayerView:
    pos = m.position(seat)
    lit: dict[int, tuple[int, ...]] = {}
    steps: tuple[tuple[int, int], ...] = ()
    can_confirm = False
    if m.play is not None and m.turn == seat:
        steps = m.play.steps
        if m.phase is Phase.MOVING:
            lit = {k: tuple(v) for k, v in m.play.lit().items()}
        can_confirm = m.phase is Phase.CONFIRMING or m.play.current in m.play.results
    if m.phase is Phase.NO_MOVE and m.turn == seat:
        can_confirm = True
    if m.play is not None and m.turn == seat:
        shown = m.play.current
        own, opponent = shown.mover, shown.opponent
    else:
        own, opponent = pos.mover, pos.opponent
    return PlayerView(
        seat=seat,
        phase=m.phase,
        turn=m.turn,
        decider=m.decider,
        game_no=m.game_no,
        match_length=m.options.match_length,
        score=m.score,
        crawford=m.crawford_game,
        position_id=pos.gnubg_id(),
        own=own,
        opponent=opponent,
        pips=(pip_count(own), pip_count(opponent)),
        dice=m.dice,
        steps=steps,
        cube=m.cube,
        cube_owner=m.cube_owner,
        can_double=may_double(m, seat),
        can_confirm=can_confirm,
        deadline_ms=due.at_ms if due else None,
        deadline_kind=due.kind if due else None,
        clock_ms=m.clock_deadline_ms if m.phase in _CLOCKED else None,
        movable=tuple(lit),
        lit=lit,
        boosts_left=m.options.boosts_per_game - m.boosts_used[seat],
        auto_roll=m.auto_roll[seat],
        away=(m.away_since_ms[0] is not None, m.away_since_ms[1] is not None),
        fingerprint=m.fingerprint,
        winner=m.winner,
        end_reason=m.end_reason,
        rematch_offered_by=m.rematch_offered_by,
        rematch_agreed=m.rematch_agreed,
        last_result=m.games[-1].result if m.games else None,
    )


def spectator_view(m: MatchState) -> PlayerView:
    """What anyone watching may see (I-35): seat 0's side of the board as it stood when the
    turn in play began (a turn's single steps stay the mover's own until it ends, as for the
    opponent), and nothing to act on: no lit points, cube or confirm rights, or preferences."""
    view = player_view(m, 0)
    pos = m.position(0)
    return replace(
        view,
        own=pos.mover,
        opponent=pos.opponent,
        pips=(pos.mover_pips, pos.opponent_pips),
        steps=(),
        lit={},
        movable=(),
        can_double=False,
        can_confirm=False,
        auto_roll=False,
        boosts_left=0,
    )
