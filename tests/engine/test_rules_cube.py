"""The doubling cube per profile (RULES.md 'doubling cube' row; I-1, I-2, I-3, I-4, I-22)."""

from __future__ import annotations

from engine import commands as c
from engine import events as e
from engine import profiles
from engine.machine import may_double, next_deadline
from engine.position import Position
from engine.state import Phase
from engine.vocabulary import DropReason
from tests.engine.scenario import clock, ok, refused, rig, side, spot, start, types

START = (Position.start().mover, Position.start().mover)
W1 = profiles.wagered(1, 100)


def test_i1_wagered_cube_only_in_a_match_to_one() -> None:
    assert W1.cube and not profiles.wagered(3, 100).cube
    longer = spot(profiles.wagered(3, 100), START)
    refused(longer, c.OfferDouble(0), 10, "CANNOT_DOUBLE")
    out = ok(spot(W1, START), c.OfferDouble(0), 10)
    assert out.events == (e.DoubleOffered(0, 2, 10 + 45_000 + 1_500),)


def test_never_on_the_opening_move() -> None:
    """The opening move is played with the opening roll, so there is no chance to double."""
    st, _ = start(W1, 4, 1)
    assert st.match.phase is Phase.MOVING
    refused(st, c.OfferDouble(0), 10, "WRONG_PHASE")


def test_i2_drop_gives_the_game_at_the_value_before_the_double() -> None:
    st = ok(spot(W1, START, cube=2, cube_owner=0), c.OfferDouble(0), 10).state
    out = ok(st, c.Drop(1), 20)
    assert e.DoubleDropped(1, DropReason.DROP) in out.events
    ended = next(ev for ev in out.events if isinstance(ev, e.GameEnded))
    assert (ended.winner, ended.result, ended.points, ended.cube) == (0, "drop", 2, 2)
    assert out.state.match.phase is Phase.MATCH_OVER


def test_i2_unanswered_double_is_a_drop_when_the_clock_runs_out() -> None:
    st = ok(spot(W1, START), c.OfferDouble(0), 10).state
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.seat, due.at_ms) == ("answer", 1, 10 + 46_500)
    refused(st, c.Deadline(), due.at_ms - 1, "NOT_DUE")
    out = clock(st)
    assert types(out.events)[:3] == ["timed_out", "double_dropped", "game_ended"]
    assert out.events[1] == e.DoubleDropped(1, DropReason.TIMEOUT)
    assert out.state.match.winner == 0


def test_i3_after_a_take_only_the_owner_may_double() -> None:
    st = ok(spot(W1, START), c.OfferDouble(0), 10).state
    taken = ok(st, c.Take(1), 20)
    m = taken.state.match
    assert (m.cube, m.cube_owner, m.phase, m.turn) == (2, 1, Phase.AWAIT_ROLL, 0)
    assert not may_double(m, 0)
    refused(taken.state, c.OfferDouble(0), 30, "CANNOT_DOUBLE")
    # Next turn: seat 1 owns the cube and may redouble before rolling.
    rolled = ok(rig(taken.state, 6, 5), c.Roll(0), 30).state
    play = rolled.match.play
    assert play is not None
    done = ok(rolled, c.SubmitPlay(0, play.plays[0].steps), 40).state
    assert done.match.turn == 1 and may_double(done.match, 1)
    redouble = ok(done, c.OfferDouble(1), 50)
    assert redouble.events == (e.DoubleOffered(1, 4, 50 + 46_500),)


def test_double_only_before_rolling() -> None:
    st = ok(rig(spot(W1, START), 6, 5), c.Roll(0), 10).state
    refused(st, c.OfferDouble(0), 20, "WRONG_PHASE")


def test_i4_a_double_needs_both_players_to_cover() -> None:
    st = spot(W1, START)
    out = refused(st, c.OfferDouble(0, both_cover=False), 10, "CANNOT_COVER")
    assert "I-4" in out.message


def test_i4_taker_who_cannot_cover_drops() -> None:
    st = ok(spot(W1, START), c.OfferDouble(0), 10).state
    out = ok(st, c.Take(1, taker_covers=False), 20)
    assert e.DoubleDropped(1, DropReason.CANNOT_COVER) in out.events
    assert out.state.match.winner == 0 and out.state.match.games[-1].result == "drop"


def test_i4_doubler_who_cannot_cover_withdraws_and_play_goes_on() -> None:
    st = ok(spot(W1, START), c.OfferDouble(0), 10_000).state
    out = ok(st, c.Take(1, doubler_covers=False), 20_000)
    assert out.events[0] == e.DoubleWithdrawn(0)
    m = out.state.match
    assert (m.phase, m.turn, m.cube, m.cube_owner) == (Phase.AWAIT_ROLL, 0, 1, -1)
    # The doubler's clock resumes with the time it had left (46.5 s - 10 s).
    assert m.clock_deadline_ms == 20_000 + 36_500
    refused(out.state, c.OfferDouble(0), 21_000, "CANNOT_DOUBLE")


def test_i4_taker_short_but_doubler_left_wins_the_match() -> None:
    st = spot(W1, START, away_since_ms=(0, None), away_expired=(True, False))
    st = ok(st, c.OfferDouble(0), 10).state
    out = ok(st, c.Take(1, taker_covers=False), 20)
    ended = next(ev for ev in out.events if isinstance(ev, e.MatchEnded))
    assert (ended.winner, ended.reason) == (1, "doubler_left")


def test_points_on_a_match_to_one_are_multiplied_by_the_cube() -> None:
    sides = (side({1: 1}), side({6: 5, 8: 3, 13: 7}))  # loser has borne off nothing: gammon
    st = spot(W1, sides, cube=4, cube_owner=1, dice=(2, 1), phase=Phase.MOVING)
    out = ok(ok(st, c.Move(0, 1, 0), 10).state, c.Confirm(0), 20)
    ended = next(ev for ev in out.events if isinstance(ev, e.GameEnded))
    assert (ended.result, ended.points, ended.cube) == ("gammon", 8, 4)


def test_casual_cube_house_rule_off_by_default_and_capped_at_64() -> None:
    """I-22: `cube` off by default; 2..64; the multiplier applies to gammons."""
    refused(spot(profiles.casual(), START), c.OfferDouble(0), 10, "CANNOT_DOUBLE")
    on = profiles.casual(cube=True)
    ok(spot(on, START), c.OfferDouble(0), 10)
    refused(spot(on, START, cube=64, cube_owner=0), c.OfferDouble(0), 10, "CANNOT_DOUBLE")
    assert next_deadline(ok(spot(on, START), c.OfferDouble(0), 10).state.match) is None  # no clock


def test_scored_has_no_cube() -> None:
    refused(spot(profiles.scored(1), START), c.OfferDouble(0), 10, "CANNOT_DOUBLE")


def test_crawford_game_has_no_doubling() -> None:
    """I-22 crawford: once a player reaches match length - 1, the next game has no cube."""
    opts = profiles.casual(match_length=3, cube=True)
    sides = (side({1: 1}), side({1: 2, 2: 12}))  # seat 1 has borne one off: a single
    st = spot(opts, sides, score=(1, 0), dice=(2, 1), phase=Phase.MOVING)
    out = ok(st, c.Move(0, 1, 0), 10)  # casual: the turn ends by itself
    m = out.state.match
    assert m.score == (2, 0) and m.phase is Phase.BETWEEN_GAMES and m.crawford_game
    nxt = clock(out.state)
    assert nxt.events[0] == e.GameStarted(2, True, (2, 0))
    crawford = spot(opts, START, crawford_game=True, crawford_done=True)
    refused(crawford, c.OfferDouble(0), 10, "CANNOT_DOUBLE")
    post = spot(opts, START, crawford_game=False, crawford_done=True)
    ok(post, c.OfferDouble(0), 10)
