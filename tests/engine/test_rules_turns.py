"""Playing a turn: steps, undo, done, no move, closed board, forced plays (RULES.md rows;
I-16, I-20, I-23, I-29, I-30)."""

from __future__ import annotations

from engine import commands as c
from engine import events as e
from engine import profiles
from engine.position import Position
from engine.state import Phase
from engine.turn import Turn, TurnError, validate_play
from engine.vocabulary import PassReason
from tests.engine.scenario import clock, event, ok, refused, rig, side, spot, types

START = (Position.start().mover, Position.start().mover)
W = profiles.wagered(3, 100)


def _moving(options: profiles.RulesOptions, dice: tuple[int, int], sides=START, turn: int = 0):  # type: ignore[no-untyped-def]
    return spot(options, sides, turn=turn, dice=dice, phase=Phase.MOVING)


def test_wagered_done_only_once_every_required_number_is_played() -> None:
    st = _moving(W, (3, 1))
    one = ok(st, c.Move(0, 8, 5), 10)
    assert one.events == (e.CheckersMoved(0, ((8, 5),), ()),)
    refused(one.state, c.Confirm(0), 20, "INCOMPLETE_PLAY")
    two = ok(one.state, c.Move(0, 6, 5), 30)
    assert two.state.match.phase is Phase.MOVING  # DONE still needed (UNDO until DONE)
    undone = ok(two.state, c.Undo(0), 40)
    assert undone.events == (e.StepsUndone(0, ((6, 5),)),)
    again = ok(ok(undone.state, c.Move(0, 6, 5), 50).state, c.Confirm(0), 60)
    assert types(again.events)[:2] == ["turn_ended", "turn_started"]
    assert again.state.match.turn == 1


def test_moves_by_the_wrong_seat_or_illegal_steps_change_nothing() -> None:
    st = _moving(W, (3, 1))
    refused(st, c.Move(1, 8, 5), 10, "NOT_YOUR_TURN")
    refused(st, c.Move(0, 13, 12), 10, "ILLEGAL_STEP")  # blocked point
    refused(st, c.Move(0, 8, 2), 10, "ILLEGAL_STEP")  # no such die
    refused(st, c.Roll(0), 10, "WRONG_PHASE")
    refused(st, c.Undo(0), 10, "NOTHING_TO_UNDO")
    refused(st, c.Move(7, 8, 5), 10, "BAD_SEAT")


def test_the_other_seats_commands_during_a_move_are_not_its_turn() -> None:
    """Issue 24, item 8: while seat 0 moves, whatever seat 1 sends (a roll, a confirm, an undo,
    a double) is NOT_YOUR_TURN, not WRONG_PHASE; the mover's own roll is WRONG_PHASE."""
    st = _moving(W, (3, 1))
    for cmd in (c.Roll(1), c.Confirm(1), c.Undo(1), c.OfferDouble(1), c.SubmitPlay(1, ())):
        refused(st, cmd, 10, "NOT_YOUR_TURN")
    refused(st, c.Roll(0), 10, "WRONG_PHASE")


def test_lit_totals_skip_a_hit_on_the_intermediate_point() -> None:
    """Totals are lit for one checker, except when they would hit on the way."""
    own = side({13: 2, 6: 13})
    opp = side({15: 1, 24: 14})  # opponent blot on its 15 = our 10
    turn = Turn(Position(own, opp), (3, 1))
    lit = turn.lit()
    assert 10 in lit[13] and 12 in lit[13]
    assert 9 in lit[13]  # 13/12/9 is fine even though 13/10/9 would hit on 10
    opp2 = side({15: 1, 13: 1, 24: 13})  # blots on our 10 and our 12
    turn2 = Turn(Position(own, opp2), (3, 1))
    assert 9 not in turn2.lit()[13]  # both ways hit on the way: no total


def test_i30_shorter_way_reaching_the_same_result_is_accepted() -> None:
    """Bearing off at once with a single number when using both dice ends the same way."""
    start = Position(side({6: 1}), side({24: 15}))
    done = validate_play(start, (6, 5), ((6, 0),))
    assert done.current.mover_off == 15
    st = _moving(W, (6, 5), sides=(side({6: 1}), side({24: 15})))
    out = ok(ok(st, c.Move(0, 6, 0), 10).state, c.Confirm(0), 20)
    assert any(isinstance(ev, e.GameEnded) for ev in out.events)


def test_i30_each_step_must_be_legal_in_turn() -> None:
    start = Position.start()
    try:
        validate_play(start, (3, 1), ((8, 7), (8, 4)))
    except TurnError as err:
        assert err.code == "ILLEGAL_STEP"
    else:
        raise AssertionError("8/4 with a 3 left must be refused")
    try:
        validate_play(start, (3, 1), ((8, 5),))
    except TurnError as err:
        assert err.code == "INCOMPLETE_PLAY"
    else:
        raise AssertionError("using one die of two is incomplete")


def test_i23_casual_turn_passes_once_every_die_is_used() -> None:
    st = _moving(profiles.casual(), (3, 1))
    one = ok(st, c.Move(0, 8, 5), 10)
    assert one.state.match.phase is Phase.MOVING
    two = ok(one.state, c.Move(0, 6, 5), 20)
    assert types(two.events)[:3] == ["checkers_moved", "turn_ended", "turn_started"]
    # No undo once the turn has passed: it is the other seat's turn now (issue 24, item 8).
    refused(two.state, c.Undo(0), 30, "NOT_YOUR_TURN")


def test_i20_scored_confirm_window_then_the_turn_passes_by_itself() -> None:
    st = _moving(profiles.scored(3), (3, 1))
    out = ok(ok(st, c.Move(0, 8, 5), 10).state, c.Move(0, 6, 5), 20)
    assert out.events[-1] == e.AwaitingConfirm(0, 20 + 3000)
    assert out.state.match.phase is Phase.CONFIRMING
    undone = ok(out.state, c.Undo(0), 500)  # undo inside the window
    assert undone.state.match.phase is Phase.MOVING
    passed = clock(out.state)
    assert types(passed.events)[:2] == ["turn_ended", "turn_started"]
    cont = ok(out.state, c.Confirm(0), 100)  # CONTINUE at once
    assert cont.state.match.turn == 1


def test_no_legal_move_per_profile() -> None:
    """Row 'no legal move': wagered passes; scored shows it until 'Got it' or 3 s; casual skips."""
    blocked = (side({6: 14}, bar=1), side({1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 7: 5}))  # 6 open? no
    # Seat 0 on the bar; the opponent holds its 1..5 points (our 24..20); a 6 would enter on 19.
    for options, phase_after in (
        (W, Phase.AWAIT_ROLL),
        (profiles.casual(), Phase.AWAIT_ROLL),
        (profiles.scored(3), Phase.NO_MOVE),
    ):
        st = rig(spot(options, blocked), 1, 2)
        out = ok(st, c.Roll(0), 10)
        assert out.events[0] == e.DiceRolled(0, (1, 2), legal_plays=0)
        assert out.state.match.phase is phase_after
        if phase_after is Phase.NO_MOVE:
            assert out.state.match.turn == 0
            got_it = ok(out.state, c.Confirm(0), 20)
            assert got_it.events[0] == e.TurnPassed(0, PassReason.NO_MOVES, (1, 2))
            timed = clock(out.state)
            assert timed.events[0] == e.TurnPassed(0, PassReason.NO_MOVES, (1, 2))
            assert next(iter([timed.state.match.turn])) == 1
        else:
            assert out.events[1] == e.TurnPassed(0, PassReason.NO_MOVES, (1, 2))
            assert out.state.match.turn == 1


def test_i16_scored_closed_board_passes_without_rolling() -> None:
    closed = (side({6: 14}, bar=1), side({1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 8: 3}))
    st = spot(profiles.scored(3), closed, turn=1)
    # Seat 1 finishes a turn; seat 0's turn then starts closed out.
    st = spot(profiles.scored(3), closed, turn=1, dice=(2, 1), phase=Phase.MOVING)
    out = ok(ok(st, c.Move(1, 8, 6), 10).state, c.Move(1, 8, 7), 20)
    out = ok(out.state, c.Confirm(1), 30)
    assert types(out.events) == ["turn_ended", "turn_started", "turn_passed", "turn_started"]
    assert out.events[2] == e.TurnPassed(0, PassReason.CLOSED_BOARD)
    assert out.state.match.rolls == ()  # no dice were drawn
    # wagered: the dice are rolled, nothing enters, the turn passes.
    w = rig(spot(W, closed), 3, 4)
    rolled = ok(w, c.Roll(0), 10)
    assert types(rolled.events)[:2] == ["dice_rolled", "turn_passed"]


def test_i29_wagered_single_outcome_is_played_automatically() -> None:
    sides = (side({6: 1, 1: 14}), side({24: 15}))
    st = rig(spot(W, sides), 6, 6)  # 6-6: 6/off then nothing else... all plays give one result
    out = ok(st, c.Roll(0), 10)
    assert types(out.events)[:3] == ["dice_rolled", "checkers_moved", "turn_ended"]
    assert event(e.CheckersMoved, out.events[1]).auto is True
    casual = ok(rig(spot(profiles.casual(), sides), 6, 6), c.Roll(0), 10)
    assert casual.state.match.phase is Phase.MOVING  # not automatic elsewhere


def test_submit_play_replaces_partial_steps() -> None:
    st = ok(_moving(W, (3, 1)), c.Move(0, 24, 21), 10).state
    out = ok(st, c.SubmitPlay(0, ((8, 5), (6, 5))), 20)
    assert out.events[0] == e.StepsUndone(0, ((24, 21),))
    assert types(out.events)[1:3] == ["checkers_moved", "turn_ended"]
    refused(_moving(W, (3, 1)), c.SubmitPlay(0, ((8, 5),)), 20, "INCOMPLETE_PLAY")
