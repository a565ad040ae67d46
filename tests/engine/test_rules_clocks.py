"""Clocks per profile (RULES.md 'turn clock', 'when it runs out', 'rolling', 'time boost'
rows; I-7, I-8, I-17, I-19, I-21). Every timeout is a deadline the state names and `Deadline()`
applies."""

from __future__ import annotations

from engine import commands as c
from engine import events as e
from engine import profiles
from engine.machine import Applied, apply, next_deadline
from engine.position import Position
from engine.state import Phase
from engine.turn import Turn
from engine.vocabulary import DeadlineKind
from tests.engine.scenario import clock, event, ok, refused, rig, spot, start, types

START = (Position.start().mover, Position.start().mover)
W1 = profiles.wagered(1, 100)
W3 = profiles.wagered(3, 100)


def test_wagered_turn_clock_is_45_s_plus_grace() -> None:
    st, events = start(W3, 4, 1, now=1000)
    assert events[2] == e.TurnStarted(0, 1000 + 45_000 + 1_500)
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.seat, due.at_ms) == ("turn", 0, 47_500)
    refused(st, c.Deadline(), 47_499, "NOT_DUE")


def test_i7_timeout_rolls_plays_the_first_legal_play_and_ends_the_turn() -> None:
    st = rig(spot(W3, START, turn=1), 3, 1)
    out = clock(st)
    assert types(out.events)[:5] == [
        "timed_out",
        "dice_rolled",
        "checkers_moved",
        "turn_ended",
        "turn_started",
    ]
    first = Turn(st.match.position(1), (3, 1)).plays[0]
    assert out.events[2] == e.CheckersMoved(1, first.steps, (), auto=True)
    assert out.events[0] == e.TimedOut(1, DeadlineKind.TURN, 46_500, 46_500)


def test_i7_incomplete_steps_are_undone_and_the_first_play_is_made() -> None:
    st = spot(W3, START, dice=(3, 1), phase=Phase.MOVING)
    st = ok(st, c.Move(0, 13, 10), 100).state
    out = clock(st)
    assert types(out.events)[:3] == ["timed_out", "steps_undone", "checkers_moved"]
    first = Turn(st.match.position(0), (3, 1)).plays[0].steps
    assert event(e.CheckersMoved, out.events[2]).steps == first


def test_a_complete_unconfirmed_play_stands_at_the_timeout() -> None:
    st = spot(W3, START, dice=(3, 1), phase=Phase.MOVING)
    st = ok(ok(st, c.Move(0, 8, 5), 100).state, c.Move(0, 6, 5), 200).state
    out = clock(st)
    assert types(out.events)[:2] == ["timed_out", "turn_ended"]
    assert event(e.TurnEnded, out.events[1]).steps == ((8, 5), (6, 5))


def test_boosts_add_ten_seconds_twice_a_game_on_your_own_clock() -> None:
    st = spot(W3, START)
    refused(st, c.Boost(1), 10, "NOT_YOUR_TURN")  # only on your own clock
    one = ok(st, c.Boost(0), 10)
    assert one.events == (e.BoostApplied(0, 46_500 + 10_000, 1, 10),)
    two = ok(one.state, c.Boost(0), 20)
    assert two.state.match.clock_deadline_ms == 66_500
    refused(two.state, c.Boost(0), 30, "NO_BOOSTS_LEFT")
    refused(spot(profiles.scored(3), START), c.Boost(0), 10, "NOT_AVAILABLE")
    answering = ok(spot(W1, START), c.OfferDouble(0), 10).state
    boosted = ok(answering, c.Boost(1), 20)  # the taker's clock while answering
    assert event(e.BoostApplied, boosted.events[0]).seat == 1


def test_i8_auto_roll_at_once_when_the_player_cannot_double() -> None:
    st = spot(W3, START, turn=1, dice=(3, 1), phase=Phase.MOVING, auto_roll=(True, False))
    out = ok(st, c.SubmitPlay(1, Turn(st.match.position(1), (3, 1)).plays[0].steps), 100)
    assert types(out.events)[-2:] == ["turn_started", "dice_rolled"]
    assert event(e.DiceRolled, out.events[-1]).auto is True


def test_i8_auto_roll_waits_2_5_s_when_the_player_could_double() -> None:
    st = spot(W1, START, auto_roll=(True, False), now=1000)
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.at_ms) == ("auto_roll", 3500)
    out = clock(st)
    assert event(e.DiceRolled, out.events[0]).auto


def test_i8_auto_roll_preference_set_during_the_turn_rolls_now() -> None:
    st = spot(W3, START)
    out = ok(st, c.SetAutoRoll(0, True), 10)
    assert types(out.events)[:2] == ["auto_roll_set", "dice_rolled"]
    refused(spot(profiles.casual(), START), c.SetAutoRoll(0, True), 10, "NOT_AVAILABLE")


def test_i21_casual_rolls_itself_after_25_s_unless_the_player_may_double() -> None:
    st = spot(profiles.casual(), START, now=0)
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.at_ms) == ("auto_roll", 25_000)
    cube = spot(profiles.casual(cube=True), START)
    assert next_deadline(cube.match) is None  # may double: no auto roll, and no clock


def test_casual_has_no_turn_clock() -> None:
    st = spot(profiles.casual(), START, dice=(3, 1), phase=Phase.MOVING)
    assert next_deadline(st.match) is None


def test_i17_scored_move_time_with_a_warning_30_s_before() -> None:
    st = spot(profiles.scored(3, move_time_s=60), START, now=0)
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.at_ms) == ("move_warning", 30_000)
    warned = clock(st)
    assert warned.events == (e.MoveTimeWarning(0, 60_000),)
    due = next_deadline(warned.state.match)
    assert due is not None and (due.kind, due.at_ms) == ("move_time", 60_000)
    out = clock(warned.state)  # I-18: running out of move time is leaving
    assert types(out.events) == ["timed_out", "match_ended"]
    assert event(e.MatchEnded, out.events[1]).reason == "move_time"


def test_i19_scored_test_games_have_no_move_timer() -> None:
    st = spot(profiles.scored(3, test=True), START)
    assert next_deadline(st.match) is None


def test_i19_test_games_allow_taking_back_the_last_turn_before_the_opponent_rolls() -> None:
    opts = profiles.scored(3, test=True)
    st = spot(opts, START, dice=(3, 1), phase=Phase.MOVING)
    done = ok(ok(ok(st, c.Move(0, 8, 5), 1).state, c.Move(0, 6, 5), 2).state, c.Confirm(0), 3).state
    back = ok(done, c.TakeBack(0), 4)
    m = back.state.match
    assert (m.turn, m.phase, m.dice, m.sides) == (0, Phase.MOVING, (3, 1), START)
    rolled = ok(rig(done, 2, 2), c.Roll(1), 5).state
    refused(rolled, c.TakeBack(0), 6, "CANNOT_TAKE_BACK")
    refused(spot(profiles.scored(3), START), c.TakeBack(0), 6, "NOT_AVAILABLE")


def test_no_clock_between_scored_games_counts_against_anyone() -> None:
    st = spot(profiles.scored(3), START, phase=Phase.BETWEEN_GAMES, clock_deadline_ms=None)
    due = next_deadline(st.match)
    assert due is not None and due.kind == "next_game"


def test_scaled_options_run_every_clock_fast() -> None:
    fast = W3.scaled(0.01)
    assert (fast.turn_clock_ms, fast.grace_ms, fast.disconnect_ms) == (450, 15, 600)
    _st, events = start(fast, 4, 1)
    assert events[2] == e.TurnStarted(0, 465)


def test_i40_an_act_at_or_after_its_deadline_is_refused_before_the_clock_fires() -> None:
    """I-40: a move counts only if it reached the table before its deadline. The clock worker
    fires a moment late (its lateness); an act in that moment is TIME_UP and changes nothing,
    and the timeout then decides the turn. Leaving is never refused for the time."""
    st = rig(spot(W3, START, turn=0, now=0), 3, 1)  # deadline 46_500
    deadline = 45_000 + 1_500
    rolled = ok(st, c.Roll(0), deadline - 1)  # a millisecond before: it counts
    assert rolled.state.match.phase is Phase.MOVING
    whole = Turn(rolled.state.match.position(0), (3, 1)).plays[0].steps
    for act in (c.Move(0, 8, 5), c.SubmitPlay(0, whole), c.Resign(0)):
        refused(rolled.state, act, deadline, "TIME_UP")
        refused(rolled.state, act, deadline + 95, "TIME_UP")  # the suite's finding: 95 ms late
    refused(st, c.Roll(0), deadline, "TIME_UP")
    cubed = spot(W1, START, turn=0, now=0)  # the cube is in play in a match to one (I-1)
    refused(cubed, c.OfferDouble(0), deadline + 1, "TIME_UP")
    out = clock(rolled.state)  # the clock fires: the first legal play, the turn ends
    assert types(out.events)[:2] == ["timed_out", "checkers_moved"]
    assert isinstance(apply(rolled.state, c.Leave(0), deadline + 95), Applied)
    # An answer to a double is bound by its own clock the same way (I-2).
    offered = ok(cubed, c.OfferDouble(0), 1_000)
    answer_by = event(e.DoubleOffered, offered.events[-1]).deadline_ms
    assert answer_by is not None
    refused(offered.state, c.Take(1), answer_by, "TIME_UP")
    assert isinstance(apply(offered.state, c.Take(1), answer_by - 1), Applied)


def test_i40_the_scored_confirm_window_bounds_an_undo() -> None:
    st = rig(spot(profiles.scored(3), START, turn=0, now=0), 3, 1)
    moving = ok(st, c.Roll(0), 10)
    done = ok(ok(moving.state, c.Move(0, 8, 5), 20).state, c.Move(0, 6, 5), 30)
    assert done.state.match.phase is Phase.CONFIRMING
    ends = event(e.AwaitingConfirm, done.events[-1]).deadline_ms
    assert isinstance(apply(done.state, c.Undo(0), ends - 1), Applied)
    refused(done.state, c.Undo(0), ends, "TIME_UP")
