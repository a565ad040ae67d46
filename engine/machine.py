"""The match state machine: `apply(state, command, now_ms) -> Applied | Rejection`.

Pure: no clock, no randomness, no I/O. Dice come from the seed held in the state's secret part
(I-27); time comes in as `now_ms`. `next_deadline(match)` says when the clock must act and what
it does then; the clock applies `Deadline()` through the same path, so every timeout is a unit
test. A rejected command changes nothing: the caller keeps the state it had.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from engine import commands as c
from engine import dice as dice_stream
from engine import events as e
from engine.position import Position
from engine.profiles import RulesOptions
from engine.state import IN_GAME, GameRecord, MatchState, Phase, Secret, Snapshot, TableState
from engine.steps import is_hit
from engine.turn import Turn, TurnError, validate_play
from engine.vocabulary import (
    DeadlineKind,
    DropReason,
    EndReason,
    GameResult,
    PassReason,
    RejectionCode,
)

_START = Position.start().mover
BOTH_SEATS = -1  # an away deadline of both seats at once (casual live)


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a command was refused; the state is unchanged."""

    code: RejectionCode
    message: str


class Applied(NamedTuple):
    state: TableState
    events: tuple[e.Event, ...]


class PendingDeadline(NamedTuple):
    """A timed thing due at `at_ms` (not the clock's command, `commands.Deadline`)."""

    at_ms: int
    kind: DeadlineKind
    seat: int  # the seat it concerns, -1 for the table


class _Reject(Exception):
    def __init__(self, code: RejectionCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_MATCH_FIELDS = tuple(f.name for f in dataclasses.fields(MatchState))


def _replace(m: MatchState, changes: dict[str, Any]) -> MatchState:
    """`dataclasses.replace` for MatchState without its per-call field checks (it runs several
    times per command): every field read in one call, the changed ones put in by position."""
    values = list(_MATCH_VALUES(m))
    for name, value in changes.items():
        at = _MATCH_INDEX.get(name)
        if at is None:
            raise TypeError(f"MatchState has no field {name!r}")
        values[at] = value
    return MatchState(*values)


_MATCH_VALUES = operator.attrgetter(*_MATCH_FIELDS)
_MATCH_INDEX = {name: i for i, name in enumerate(_MATCH_FIELDS)}


class _Ctx:
    """A transition under construction: the new state and the events so far."""

    def __init__(self, state: TableState, now: int) -> None:
        self.m = state.match
        self.secret = state.secret
        self.now = now
        self.events: list[e.Event] = []

    def set(self, **changes: Any) -> None:
        self.m = _replace(self.m, changes)

    def emit(self, event: e.Event) -> None:
        self.events.append(event)

    def draw(self, count: int) -> tuple[int, ...]:
        values, cursor = dice_stream.draw(self.secret.seed, self.secret.cursor, count)
        self.secret = dataclasses.replace(self.secret, cursor=cursor)
        return values

    @property
    def opt(self) -> RulesOptions:
        return self.m.options


# -- creating a match ------------------------------------------------------------------------


def new_match(
    options: RulesOptions,
    seed: bytes,
    now_ms: int,
    auto_roll: tuple[bool, bool] = (False, False),
    absent: tuple[bool, bool] = (False, False),
) -> Applied:
    """A new match with its first game dealt (opening roll included). An `absent` seat (a
    player with no connection to the table) is away from the deal (I-41): its away rule runs
    from now, and its first connection brings it back."""
    dice_stream.check_seed(seed)
    match = MatchState(
        options=options,
        fingerprint=dice_stream.fingerprint(seed),
        phase=Phase.BETWEEN_GAMES,
        sides=(_START, _START),
        turn=0,
        game_no=0,
        auto_roll=auto_roll if options.auto_roll_pref else (False, False),
        last_activity_ms=now_ms,
    )
    ctx = _Ctx(TableState(match, Secret(seed)), now_ms)
    _start_game(ctx)
    for seat in (0, 1):
        if absent[seat]:
            _cmd_disconnect(ctx, c.Disconnect(seat))
    return Applied(TableState(ctx.m, ctx.secret), tuple(ctx.events))


# -- rules helpers -------------------------------------------------------------------------


def may_double(m: MatchState, seat: int) -> bool:
    return (
        m.options.cube
        and m.phase is Phase.AWAIT_ROLL
        and m.turn == seat
        and not m.crawford_game
        and m.cube_owner in (-1, seat)
        and m.cube * 2 <= m.options.cube_max
        and not m.double_withdrawn
    )


def closed_out(pos: Position) -> bool:
    """A checker on the bar and all six of the opponent's home points held (I-16)."""
    return pos.mover[24] > 0 and all(pos.opponent[i] >= 2 for i in range(6))


def _start_game(ctx: _Ctx) -> None:
    m = ctx.m
    ctx.set(
        game_no=m.game_no + 1,
        sides=(_START, _START),
        cube=1,
        cube_owner=-1,
        boosts_used=(0, 0),
        dice=None,
        play=None,
        last_turn=None,
    )
    ctx.emit(e.GameStarted(ctx.m.game_no, ctx.m.crawford_game, ctx.m.score))
    if (
        ctx.m.game_no > 1
        and ctx.opt.later_games_previous_winner_starts
        and ctx.m.last_winner is not None
    ):
        _begin_turn(ctx, ctx.m.last_winner)  # I-14: the last game's winner rolls first
        return
    while True:
        a, b = ctx.draw(2)  # one die for seat 0, then one for seat 1
        ctx.set(rolls=(*ctx.m.rolls, (a, b)))
        starter = None if a == b else (0 if a > b else 1)
        ctx.emit(e.OpeningRoll((a, b), starter))
        if starter is not None:
            break
    if ctx.opt.opening_dice_played:
        own, other = (a, b) if starter == 0 else (b, a)
        _begin_turn(ctx, starter, opening=(own, other))
    else:
        _begin_turn(ctx, starter)


def _begin_turn(
    ctx: _Ctx, seat: int, opening: tuple[int, int] | None = None, passes: int = 0
) -> None:
    opt = ctx.opt
    clock = None
    if opt.turn_clock_ms is not None:
        clock = ctx.now + opt.turn_clock_ms + opt.grace_ms
    elif opt.move_time_ms is not None:
        clock = ctx.now + opt.move_time_ms
    ctx.set(
        phase=Phase.AWAIT_ROLL,
        turn=seat,
        dice=None,
        play=None,
        phase_started_ms=ctx.now,
        clock_deadline_ms=clock,
        paused_remaining_ms=None,
        warned=False,
        double_withdrawn=False,
    )
    ctx.emit(e.TurnStarted(seat, clock, your_turn_notice=opt.async_mode))
    if opening is not None:
        _after_roll(ctx, seat, opening, auto=False)
        return
    if opt.closed_board_skips_roll and closed_out(ctx.m.position(seat)) and passes < 2:
        ctx.emit(e.TurnPassed(seat, PassReason.CLOSED_BOARD))
        _begin_turn(ctx, 1 - seat, passes=passes + 1)
        return
    if opt.auto_roll_pref and ctx.m.auto_roll[seat] and not may_double(ctx.m, seat):
        _roll(ctx, seat, auto=True)  # I-8: at once when the player could not double


def _roll(ctx: _Ctx, seat: int, auto: bool) -> None:
    d1, d2 = ctx.draw(2)
    dice = (d1, d2)
    ctx.set(rolls=(*ctx.m.rolls, dice))
    plays = Turn(ctx.m.position(seat), dice).plays
    ctx.emit(e.DiceRolled(seat, dice, auto=auto, legal_plays=len(plays)))
    _after_roll(ctx, seat, dice, auto)


def _after_roll(ctx: _Ctx, seat: int, dice: tuple[int, int], auto: bool) -> None:
    turn = Turn(ctx.m.position(seat), dice)
    plays = turn.plays
    ctx.set(dice=dice)
    if not plays:
        if ctx.opt.no_move_window_ms:
            ctx.set(phase=Phase.NO_MOVE, phase_started_ms=ctx.now)
            return
        ctx.emit(e.TurnPassed(seat, PassReason.NO_MOVES, dice))
        _begin_turn(ctx, 1 - seat)
        return
    if ctx.opt.autoplay_single_outcome and len(plays) == 1:  # I-29
        done = validate_play(turn.start, dice, plays[0].steps)
        _emit_moves(ctx, seat, turn.start, done.steps, auto=True)
        _finish_turn(ctx, done)
        return
    ctx.set(phase=Phase.MOVING, play=turn)


def _emit_moves(ctx: _Ctx, seat: int, pos: Position, steps: tuple[Any, ...], auto: bool) -> None:
    from engine.steps import apply_step

    hits = []
    for step in steps:
        if is_hit(pos, step):
            hits.append(step[1])
        pos = apply_step(pos, step)
    ctx.emit(e.CheckersMoved(seat, tuple(steps), tuple(hits), auto=auto))


def _finish_turn(ctx: _Ctx, turn: Turn) -> None:
    m = ctx.m
    seat = m.turn
    after = turn.current
    sides = (after.mover, after.opponent) if seat == 0 else (after.opponent, after.mover)
    snapshot = Snapshot(seat, m.sides, turn.dice)
    ctx.set(sides=sides, play=None, last_turn=snapshot)
    ctx.emit(e.TurnEnded(seat, turn.steps, ctx.m.position(1 - seat).gnubg_id()))
    if after.mover_off == 15:
        _game_won_by_board(ctx, seat)
    else:
        _begin_turn(ctx, 1 - seat)


def _pass_turn(ctx: _Ctx) -> None:
    seat = ctx.m.turn
    ctx.emit(e.TurnPassed(seat, PassReason.NO_MOVES, ctx.m.dice))
    _begin_turn(ctx, 1 - seat)


def _game_won_by_board(ctx: _Ctx, winner: int) -> None:
    loser = ctx.m.sides[1 - winner]
    opt = ctx.opt
    if sum(loser) < 15 or not opt.gammons:
        result, points = GameResult.SINGLE, 1
    elif opt.backgammons and (loser[24] or any(loser[18:24])):
        result, points = GameResult.BACKGAMMON, 3
    else:
        result, points = GameResult.GAMMON, 2
    _end_game(ctx, winner, result, points)


def _end_game(ctx: _Ctx, winner: int, result: GameResult, base_points: int) -> None:
    m = ctx.m
    points = base_points * m.cube if ctx.opt.cube else base_points
    score = list(m.score)
    score[winner] += points
    record = GameRecord(m.game_no, winner, result, points, m.cube)
    ctx.set(score=(score[0], score[1]), games=(*m.games, record), last_winner=winner)
    ctx.emit(e.GameEnded(m.game_no, winner, result, points, m.cube, ctx.m.score))
    if score[winner] >= ctx.opt.match_length:
        _end_match(ctx, winner, EndReason.POINTS)
        return
    crawford_next = (
        ctx.opt.crawford_rule and not m.crawford_done and score[winner] == ctx.opt.match_length - 1
    )
    ctx.set(
        phase=Phase.BETWEEN_GAMES,
        phase_started_ms=ctx.now,
        clock_deadline_ms=None,
        dice=None,
        play=None,
        crawford_game=crawford_next,
        crawford_done=m.crawford_done or crawford_next,
    )


def _end_match(
    ctx: _Ctx, winner: int, reason: EndReason, scored_points: tuple[int, int] | None = None
) -> None:
    if ctx.opt.test_game:
        scored_points = (0, 0)  # I-19: test games are recorded nowhere
    elif scored_points is None:
        scored_points = (0, 0)
        if ctx.opt.profile == "scored":
            scored_points = (1, -1) if winner == 0 else (-1, 1)
    ctx.set(
        phase=Phase.MATCH_OVER,
        winner=winner,
        end_reason=reason,
        ended_ms=ctx.now,
        clock_deadline_ms=None,
        play=None,
    )
    ctx.emit(
        e.MatchEnded(
            winner, reason, ctx.m.score, scored_points, ctx.secret.seed.hex(), ctx.m.fingerprint
        )
    )


def _close(ctx: _Ctx, reason: EndReason, left_by: int | None = None) -> None:
    ctx.set(phase=Phase.CLOSED, end_reason=reason, ended_ms=ctx.now, clock_deadline_ms=None)
    ctx.emit(e.TableClosed(reason, ctx.secret.seed.hex(), ctx.m.fingerprint, left_by))


def _leave(ctx: _Ctx, seat: int, reason: EndReason) -> None:
    """Leaving (walking out, away too long, out of move time): per profile."""
    opt = ctx.opt
    other = 1 - seat
    if opt.profile == "casual" and not opt.leave_forfeits:
        _close(ctx, EndReason.ABANDONED, left_by=seat)
        return
    if opt.profile == "scored":  # I-18
        m = ctx.m
        if not m.games or opt.match_length == 1:
            points = (-1, 1) if seat == 0 else (1, -1)
        elif m.score[seat] > m.score[other]:
            points = (0, 0)  # the leader leaves: nothing recorded
        else:
            points = (-1, 1) if seat == 0 else (1, -1)
        _end_match(ctx, other, reason, points)
        return
    _end_match(ctx, other, reason)  # I-6


# -- deadlines ------------------------------------------------------------------------------

_PRIORITY = (
    DeadlineKind.NEXT_GAME,
    DeadlineKind.CONFIRM,
    DeadlineKind.NO_MOVE,
    DeadlineKind.AUTO_ROLL,
    DeadlineKind.MOVE_WARNING,
    DeadlineKind.TURN,
    DeadlineKind.ANSWER,
    DeadlineKind.MOVE_TIME,
    DeadlineKind.AWAY,
    DeadlineKind.ASYNC_EXPIRY,
    DeadlineKind.REMATCH_EXPIRY,
)


def next_deadline(m: MatchState) -> PendingDeadline | None:
    """When the clock must act next, what it does then, and for which seat."""
    opt = m.options
    found: list[PendingDeadline] = []
    if m.phase is Phase.MATCH_OVER:
        if m.rematch_offered_by is not None and not m.rematch_agreed:
            found.append(
                PendingDeadline(
                    m.phase_started_ms + opt.rematch_window_ms,
                    DeadlineKind.REMATCH_EXPIRY,
                    m.rematch_offered_by,
                )
            )
    elif m.phase is not Phase.CLOSED:
        live = m.phase in (Phase.AWAIT_ROLL, Phase.MOVING, Phase.DOUBLE_OFFERED)
        if live and m.clock_deadline_ms is not None:
            if m.phase is Phase.DOUBLE_OFFERED:
                kind = DeadlineKind.ANSWER
            elif opt.move_time_ms is not None:
                kind = DeadlineKind.MOVE_TIME
            else:
                kind = DeadlineKind.TURN
            found.append(PendingDeadline(m.clock_deadline_ms, kind, m.decider))
            if kind == "move_time" and not m.warned:
                warn_at = max(m.phase_started_ms, m.clock_deadline_ms - opt.move_warning_ms)
                found.append(PendingDeadline(warn_at, DeadlineKind.MOVE_WARNING, m.turn))
        if m.phase is Phase.AWAIT_ROLL and may_double(m, m.turn):
            if opt.auto_roll_pref and m.auto_roll[m.turn]:
                at = m.phase_started_ms + opt.auto_roll_double_pause_ms
                found.append(PendingDeadline(at, DeadlineKind.AUTO_ROLL, m.turn))
        elif m.phase is Phase.AWAIT_ROLL and opt.auto_roll_after_ms is not None:
            at = m.phase_started_ms + opt.auto_roll_after_ms
            found.append(PendingDeadline(at, DeadlineKind.AUTO_ROLL, m.turn))
        if m.phase is Phase.CONFIRMING:
            at = m.phase_started_ms + opt.confirm_window_ms
            found.append(PendingDeadline(at, DeadlineKind.CONFIRM, m.turn))
        if m.phase is Phase.NO_MOVE:
            at = m.phase_started_ms + opt.no_move_window_ms
            found.append(PendingDeadline(at, DeadlineKind.NO_MOVE, m.turn))
        if m.phase is Phase.BETWEEN_GAMES:
            at = m.phase_started_ms + opt.next_game_delay_ms
            found.append(PendingDeadline(at, DeadlineKind.NEXT_GAME, -1))
        if opt.disconnect_ms is not None:
            for seat in (0, 1):
                since = m.away_since_ms[seat]
                if since is not None and not m.away_expired[seat]:
                    found.append(
                        PendingDeadline(since + opt.disconnect_ms, DeadlineKind.AWAY, seat)
                    )
        away = [s for s in m.away_since_ms if s is not None]
        # Both away; against the computer (which is never away) the one person away is enough.
        if opt.both_away_close_ms is not None and (
            len(away) == 2 or (away and opt.level != "players")
        ):
            since = max(away)
            found.append(
                PendingDeadline(since + opt.both_away_close_ms, DeadlineKind.AWAY, BOTH_SEATS)
            )
        if opt.async_mode:
            at = m.last_activity_ms + opt.async_expiry_ms
            found.append(PendingDeadline(at, DeadlineKind.ASYNC_EXPIRY, -1))
    if not found:
        return None
    return min(found, key=lambda d: (d.at_ms, _PRIORITY.index(d.kind), d.seat))


def _on_deadline(ctx: _Ctx, due: PendingDeadline) -> None:
    m = ctx.m
    kind, seat = due.kind, due.seat
    if kind == "turn":  # I-7: roll if needed, play the first legal play, end the turn
        ctx.emit(e.TimedOut(seat, DeadlineKind.TURN, due.at_ms, ctx.now))
        if m.phase is Phase.AWAIT_ROLL:
            _roll(ctx, seat, auto=True)
        if ctx.m.phase is Phase.MOVING and ctx.m.turn == seat:
            _timeout_play(ctx, seat)
    elif kind == "answer":  # I-2: unanswered is a drop
        ctx.emit(e.TimedOut(seat, DeadlineKind.ANSWER, due.at_ms, ctx.now))
        ctx.emit(e.DoubleDropped(seat, DropReason.TIMEOUT))
        _end_game(ctx, 1 - seat, GameResult.DROP, 1)
    elif kind == "move_time":  # I-18: running out of move time is leaving
        ctx.emit(e.TimedOut(seat, DeadlineKind.MOVE_TIME, due.at_ms, ctx.now))
        _leave(ctx, seat, EndReason.MOVE_TIME)
    elif kind == "move_warning":
        ctx.set(warned=True)
        assert m.clock_deadline_ms is not None
        ctx.emit(e.MoveTimeWarning(seat, m.clock_deadline_ms))
    elif kind == "auto_roll":
        _roll(ctx, seat, auto=True)
    elif kind == "confirm":
        assert m.play is not None
        _finish_turn(ctx, m.play)
    elif kind == "no_move":
        _pass_turn(ctx)
    elif kind == "next_game":
        _start_game(ctx)
    elif kind == "away":
        _away_expired(ctx, seat)
    elif kind == "async_expiry":
        _close(ctx, EndReason.ASYNC_EXPIRED)
    elif kind == "rematch_expiry":
        ctx.set(rematch_offered_by=None)
        ctx.emit(e.RematchExpired())


def _timeout_play(ctx: _Ctx, seat: int) -> None:
    """A complete but unconfirmed play stands; otherwise the first legal play (I-7) is made."""
    play = ctx.m.play
    assert play is not None
    if play.current in play.results:
        _finish_turn(ctx, play)
        return
    if play.steps:
        ctx.emit(e.StepsUndone(seat, play.steps))
    first = play.plays[0]
    done = validate_play(play.start, play.dice, first.steps)
    _emit_moves(ctx, seat, play.start, done.steps, auto=True)
    _finish_turn(ctx, done)


def _away_expired(ctx: _Ctx, seat: int) -> None:
    m = ctx.m
    if seat == BOTH_SEATS:  # casual live: both stayed away, or the one person vs the computer
        _close(ctx, EndReason.BOTH_AWAY if ctx.opt.level == "players" else EndReason.ABANDONED)
        return
    other = 1 - seat
    if ctx.opt.profile == "wagered":  # I-9
        if m.away_expired[other]:
            _close(ctx, EndReason.BOTH_AWAY)
            return
        other_since = m.away_since_ms[other]
        if other_since is not None:
            expired = list(m.away_expired)
            expired[seat] = True
            ctx.set(away_expired=(expired[0], expired[1]))
            assert ctx.opt.disconnect_ms is not None
            ctx.emit(e.AwayExpired(seat, other_since + ctx.opt.disconnect_ms))
            return
    _leave(ctx, seat, EndReason.AWAY)


# -- commands ---------------------------------------------------------------------------------


def _need(cond: bool, code: RejectionCode, message: str) -> None:
    if not cond:
        raise _Reject(code, message)


def _need_turn(m: MatchState, seat: int, *phases: Phase) -> None:
    """The seat must be the one to act, in one of `phases`. While a game is in progress the
    seat is checked first: the other player's command is NOT_YOUR_TURN, whatever the phase."""
    if m.phase in IN_GAME:
        _need(m.decider == seat, RejectionCode.NOT_YOUR_TURN, f"seat {seat} is not the one to act")
    _need(m.phase in phases, RejectionCode.WRONG_PHASE, f"not allowed while {m.phase.value}")


def _resume_doubler(ctx: _Ctx, **changes: Any) -> None:
    m = ctx.m
    clock = None if m.paused_remaining_ms is None else ctx.now + m.paused_remaining_ms
    ctx.set(
        phase=Phase.AWAIT_ROLL,
        clock_deadline_ms=clock,
        paused_remaining_ms=None,
        phase_started_ms=ctx.now,
        **changes,
    )
    seat = m.turn
    if ctx.opt.auto_roll_pref and ctx.m.auto_roll[seat] and not may_double(ctx.m, seat):
        _roll(ctx, seat, auto=True)


def _cmd_deadline(ctx: _Ctx, cmd: c.Deadline) -> None:
    m = ctx.m
    due = next_deadline(m)
    _need(due is not None, RejectionCode.NO_DEADLINE, "nothing is timed now")
    assert due is not None
    _need(ctx.now >= due.at_ms, RejectionCode.NOT_DUE, f"the next deadline is at {due.at_ms}")
    _on_deadline(ctx, due)


def _cmd_operator_close(ctx: _Ctx, cmd: c.OperatorClose) -> None:
    m = ctx.m
    _need(not m.finished, RejectionCode.MATCH_OVER, "the match is over")
    _close(ctx, EndReason.OPERATOR_CLOSED)


def _cmd_offer_rematch(ctx: _Ctx, cmd: c.OfferRematch) -> None:
    m = ctx.m
    opt = ctx.opt
    seat = cmd.seat
    _need(
        not opt.tournament,
        RejectionCode.NOT_AVAILABLE,
        "a tournament's match has no rematch: the bracket deals the next",
    )
    _need(
        m.rematch_offered_by is None,
        RejectionCode.ALREADY_OFFERED,
        "a rematch is already offered",
    )
    ctx.set(rematch_offered_by=seat, phase_started_ms=ctx.now)
    ctx.emit(e.RematchOffered(seat, ctx.now + opt.rematch_window_ms))


def _cmd_accept_rematch(ctx: _Ctx, cmd: c.AcceptRematch) -> None:
    m = ctx.m
    seat = cmd.seat
    _need(
        m.rematch_offered_by == 1 - seat,
        RejectionCode.NOT_OFFERED,
        "the opponent offered no rematch",
    )
    _need(not m.rematch_agreed, RejectionCode.ALREADY_AGREED, "the rematch is already agreed")
    ctx.set(rematch_agreed=True)
    ctx.emit(e.RematchAgreed())


def _cmd_roll(ctx: _Ctx, cmd: c.Roll) -> None:
    m = ctx.m
    seat = cmd.seat
    _need_turn(m, seat, Phase.AWAIT_ROLL)
    _roll(ctx, seat, auto=False)


def _cmd_move(ctx: _Ctx, cmd: c.Move) -> None:
    m = ctx.m
    opt = ctx.opt
    seat = cmd.seat
    _need_turn(m, seat, Phase.MOVING)
    assert m.play is not None
    try:
        nxt = m.play.play(cmd.frm, cmd.to)
    except TurnError as err:
        raise _Reject(RejectionCode(err.code), str(err)) from None
    _emit_moves(ctx, seat, m.play.current, nxt.steps[len(m.play.steps) :], auto=False)
    ctx.set(play=nxt)
    if nxt.is_complete():
        if opt.turn_end == "auto":
            _finish_turn(ctx, nxt)
        elif opt.turn_end == "confirm_window":
            ctx.set(phase=Phase.CONFIRMING, phase_started_ms=ctx.now)
            ctx.emit(e.AwaitingConfirm(seat, ctx.now + opt.confirm_window_ms))


def _cmd_undo(ctx: _Ctx, cmd: c.Undo) -> None:
    m = ctx.m
    seat = cmd.seat
    _need_turn(m, seat, Phase.MOVING, Phase.CONFIRMING)
    assert m.play is not None
    try:
        back = m.play.undo()
    except TurnError as err:
        raise _Reject(RejectionCode(err.code), str(err)) from None
    ctx.set(play=back, phase=Phase.MOVING)
    ctx.emit(e.StepsUndone(seat, m.play.steps[len(back.steps) :]))


def _cmd_confirm(ctx: _Ctx, cmd: c.Confirm) -> None:
    m = ctx.m
    seat = cmd.seat
    _need_turn(m, seat, Phase.MOVING, Phase.CONFIRMING, Phase.NO_MOVE)
    if m.phase is Phase.NO_MOVE:
        _pass_turn(ctx)
        return
    assert m.play is not None
    _need(
        m.play.current in m.play.results,
        RejectionCode.INCOMPLETE_PLAY,
        "play every number the rules require first",
    )
    _finish_turn(ctx, m.play)


def _cmd_submit_play(ctx: _Ctx, cmd: c.SubmitPlay) -> None:
    m = ctx.m
    seat = cmd.seat
    _need_turn(m, seat, Phase.MOVING, Phase.CONFIRMING)
    assert m.play is not None
    try:
        done = validate_play(m.play.start, m.play.dice, tuple(cmd.steps))
    except TurnError as err:
        raise _Reject(RejectionCode(err.code), str(err)) from None
    if m.play.steps:
        ctx.emit(e.StepsUndone(seat, m.play.steps))
    _emit_moves(ctx, seat, m.play.start, done.steps, auto=False)
    _finish_turn(ctx, done)


def _cmd_offer_double(ctx: _Ctx, cmd: c.OfferDouble) -> None:
    m = ctx.m
    opt = ctx.opt
    seat = cmd.seat
    _need_turn(m, seat, Phase.AWAIT_ROLL)
    _need(may_double(m, seat), RejectionCode.CANNOT_DOUBLE, "doubling is not allowed now")
    _need(
        cmd.both_cover,
        RejectionCode.CANNOT_COVER,
        "both players must be able to cover the raise (I-4)",
    )
    remaining = None if m.clock_deadline_ms is None else m.clock_deadline_ms - ctx.now
    clock = None
    if opt.turn_clock_ms is not None:
        clock = ctx.now + opt.turn_clock_ms + opt.grace_ms
    ctx.set(phase=Phase.DOUBLE_OFFERED, paused_remaining_ms=remaining, clock_deadline_ms=clock)
    ctx.emit(e.DoubleOffered(seat, m.cube * 2, clock))


def _cmd_take(ctx: _Ctx, cmd: c.Take) -> None:
    m = ctx.m
    seat = cmd.seat
    _need_turn(m, seat, Phase.DOUBLE_OFFERED)
    doubler = 1 - seat
    if not cmd.doubler_covers:  # I-4: the double is withdrawn
        ctx.emit(e.DoubleWithdrawn(doubler))
        _resume_doubler(ctx, double_withdrawn=True)
    elif not cmd.taker_covers:
        if m.away_expired[doubler]:  # I-4: the doubler has left; the taker wins the match
            _end_match(ctx, seat, EndReason.DOUBLER_LEFT)
        else:
            ctx.emit(e.DoubleDropped(seat, DropReason.CANNOT_COVER))
            _end_game(ctx, doubler, GameResult.DROP, 1)
    else:
        ctx.emit(e.DoubleTaken(seat, m.cube * 2))
        _resume_doubler(ctx, cube=m.cube * 2, cube_owner=seat)


def _cmd_drop(ctx: _Ctx, cmd: c.Drop) -> None:
    m = ctx.m
    seat = cmd.seat
    _need_turn(m, seat, Phase.DOUBLE_OFFERED)
    ctx.emit(e.DoubleDropped(seat, DropReason.DROP))
    _end_game(ctx, 1 - seat, GameResult.DROP, 1)


def _cmd_resign(ctx: _Ctx, cmd: c.Resign) -> None:
    m = ctx.m
    opt = ctx.opt
    seat = cmd.seat
    _need(opt.resign_allowed, RejectionCode.NOT_AVAILABLE, "this table has no resign (use leave)")
    _need(m.phase in IN_GAME, RejectionCode.WRONG_PHASE, "no game in progress")
    _end_game(ctx, 1 - seat, GameResult.RESIGN, 1)  # I-5: a single, times the cube


def _cmd_leave(ctx: _Ctx, cmd: c.Leave) -> None:
    seat = cmd.seat
    _leave(ctx, seat, EndReason.LEFT)


def _cmd_disconnect(ctx: _Ctx, cmd: c.Disconnect) -> None:
    m = ctx.m
    opt = ctx.opt
    seat = cmd.seat
    _need(
        m.away_since_ms[seat] is None,
        RejectionCode.ALREADY_AWAY,
        f"seat {seat} is already away",
    )
    away = list(m.away_since_ms)
    away[seat] = ctx.now
    ctx.set(away_since_ms=(away[0], away[1]))
    window = opt.disconnect_ms
    ctx.emit(e.PlayerAway(seat, None if window is None else ctx.now + window))


def _cmd_reconnect(ctx: _Ctx, cmd: c.Reconnect) -> None:
    m = ctx.m
    seat = cmd.seat
    _need(m.away_since_ms[seat] is not None, RejectionCode.NOT_AWAY, f"seat {seat} is not away")
    away = list(m.away_since_ms)
    away[seat] = None
    ctx.set(away_since_ms=(away[0], away[1]))
    ctx.emit(e.PlayerBack(seat))
    if m.away_expired[1 - seat] and not m.away_expired[seat]:
        _leave(ctx, 1 - seat, EndReason.AWAY)  # I-9: back in time; the other forfeits


def _cmd_boost(ctx: _Ctx, cmd: c.Boost) -> None:
    m = ctx.m
    opt = ctx.opt
    seat = cmd.seat
    _need(opt.boosts_per_game > 0, RejectionCode.NOT_AVAILABLE, "this table has no time boosts")
    _need_turn(m, seat, Phase.AWAIT_ROLL, Phase.MOVING, Phase.DOUBLE_OFFERED)
    _need(m.clock_deadline_ms is not None, RejectionCode.NO_CLOCK, "no clock is running")
    _need(
        m.boosts_used[seat] < opt.boosts_per_game,
        RejectionCode.NO_BOOSTS_LEFT,
        "boosts used up",
    )
    assert m.clock_deadline_ms is not None
    used = list(m.boosts_used)
    used[seat] += 1
    clock = m.clock_deadline_ms + opt.boost_ms
    ctx.set(boosts_used=(used[0], used[1]), clock_deadline_ms=clock)
    ctx.emit(e.BoostApplied(seat, clock, opt.boosts_per_game - used[seat], opt.boost_cost))


def _cmd_set_auto_roll(ctx: _Ctx, cmd: c.SetAutoRoll) -> None:
    m = ctx.m
    opt = ctx.opt
    seat = cmd.seat
    _need(opt.auto_roll_pref, RejectionCode.NOT_AVAILABLE, "this table has no auto roll option")
    prefs = list(m.auto_roll)
    prefs[seat] = cmd.on
    ctx.set(auto_roll=(prefs[0], prefs[1]))
    ctx.emit(e.AutoRollSet(seat, cmd.on))
    if cmd.on and m.phase is Phase.AWAIT_ROLL and m.turn == seat and not may_double(m, seat):
        _roll(ctx, seat, auto=True)


def _cmd_take_back(ctx: _Ctx, cmd: c.TakeBack) -> None:
    m = ctx.m
    opt = ctx.opt
    seat = cmd.seat
    _need(opt.test_game, RejectionCode.NOT_AVAILABLE, "take-back exists in test games only (I-19)")
    last = m.last_turn
    _need(
        m.phase is Phase.AWAIT_ROLL
        and m.turn == 1 - seat
        and last is not None
        and last.seat == seat,
        RejectionCode.CANNOT_TAKE_BACK,
        "only your last turn, before the opponent rolls",
    )
    assert last is not None
    ctx.set(sides=last.sides, last_turn=None)
    ctx.emit(e.TurnTakenBack(seat))
    ctx.set(
        phase=Phase.MOVING,
        turn=seat,
        dice=last.dice,
        play=Turn(ctx.m.position(seat), last.dice),
        phase_started_ms=ctx.now,
    )


Handler = Callable[[_Ctx, Any], None]

# One handler per command type, in three groups by the guards they share: the clock's and the
# operator's (no seat), a finished match's (a seat), and a match in play's (a seat, not finished,
# activity noted).
_SYSTEM: dict[type[c.Command], Handler] = {
    c.Deadline: _cmd_deadline,
    c.OperatorClose: _cmd_operator_close,
}
_AFTER_MATCH: dict[type[c.Command], Handler] = {
    c.OfferRematch: _cmd_offer_rematch,
    c.AcceptRematch: _cmd_accept_rematch,
}
_IN_MATCH: dict[type[c.Command], Handler] = {
    c.Roll: _cmd_roll,
    c.Move: _cmd_move,
    c.Undo: _cmd_undo,
    c.Confirm: _cmd_confirm,
    c.SubmitPlay: _cmd_submit_play,
    c.OfferDouble: _cmd_offer_double,
    c.Take: _cmd_take,
    c.Drop: _cmd_drop,
    c.Resign: _cmd_resign,
    c.Leave: _cmd_leave,
    c.Disconnect: _cmd_disconnect,
    c.Reconnect: _cmd_reconnect,
    c.Boost: _cmd_boost,
    c.SetAutoRoll: _cmd_set_auto_roll,
    c.TakeBack: _cmd_take_back,
}


def _dispatch(ctx: _Ctx, cmd: c.Command) -> None:
    kind = type(cmd)
    system = _SYSTEM.get(kind)
    if system is not None:
        system(ctx, cmd)
        return
    after, in_match = _AFTER_MATCH.get(kind), _IN_MATCH.get(kind)
    if after is None and in_match is None:
        raise _Reject(RejectionCode.UNKNOWN_COMMAND, f"unknown command {kind.__name__}")
    _need(cmd.seat in (0, 1), RejectionCode.BAD_SEAT, f"seat must be 0 or 1, got {cmd.seat}")
    if after is not None:  # the after-match table's guard
        _need(
            ctx.m.phase is Phase.MATCH_OVER,
            RejectionCode.WRONG_PHASE,
            "a rematch follows a finished match",
        )
        after(ctx, cmd)
        return
    assert in_match is not None
    _need(not ctx.m.finished, RejectionCode.MATCH_OVER, "the match is over")
    if kind in _TIMED and (ran_out := _clock_ran_out(ctx.m, ctx.now)) is not None:
        # I-40: an act counts only before its deadline. The clock worker may fire a moment
        # after it (its lateness); until then the act is refused, never taken in its place.
        raise _Reject(
            RejectionCode.TIME_UP, f"the clock ran out at {ran_out}; the timeout decides the turn"
        )
    ctx.set(last_activity_ms=ctx.now)
    in_match(ctx, cmd)


# The acts a running clock bounds (I-40): a turn's, a double's and its answer, a boost of the
# clock itself. Leaving, presence and preferences are never refused for the time.
_TIMED: frozenset[type[c.Command]] = frozenset(
    {
        c.Roll,
        c.Move,
        c.Undo,
        c.Confirm,
        c.SubmitPlay,
        c.OfferDouble,
        c.Take,
        c.Drop,
        c.Resign,
        c.Boost,
        c.TakeBack,
    }
)


def _clock_ran_out(m: MatchState, now: int) -> int | None:
    """The deadline a shown clock passed at `now` and the clock has not acted on yet (the
    turn's, the answer's or the move time; the confirm window's), else None."""
    live = m.phase in (Phase.AWAIT_ROLL, Phase.MOVING, Phase.DOUBLE_OFFERED)
    if live and m.clock_deadline_ms is not None and now >= m.clock_deadline_ms:
        return m.clock_deadline_ms
    if m.phase is Phase.CONFIRMING:
        at = m.phase_started_ms + m.options.confirm_window_ms
        if now >= at:
            return at
    return None


def apply(state: TableState, command: c.Command, now_ms: int) -> Applied | Rejection:
    """Apply `command` at `now_ms`. A Rejection means nothing changed."""
    ctx = _Ctx(state, now_ms)
    try:
        _dispatch(ctx, command)
    except _Reject as rej:
        return Rejection(rej.code, rej.message)
    return Applied(TableState(ctx.m, ctx.secret), tuple(ctx.events))
