"""Opening rolls and who starts later games, per profile (RULES.md rows; I-14, I-24, I-27)."""

from __future__ import annotations

from engine import commands as c
from engine import events as e
from engine import profiles
from engine.machine import next_deadline
from engine.state import Phase, TableState
from tests.engine.scenario import clock, ok, side, spot, start, types


def test_wagered_opening_higher_die_plays_both_numbers() -> None:
    """Row 'first game opening' (wagered): the higher die moves with both numbers."""
    st, events = start(profiles.wagered(1, 100), 2, 5)
    assert types(events)[:3] == ["game_started", "opening_roll", "turn_started"]
    assert events[1] == e.OpeningRoll((2, 5), 1)
    m = st.match
    assert (m.phase, m.turn, m.dice) == (Phase.MOVING, 1, (5, 2))


def test_opening_ties_are_rolled_again() -> None:
    st, events = start(profiles.wagered(1, 100), 3, 3, 6, 1)
    assert [ev for ev in events if isinstance(ev, e.OpeningRoll)] == [
        e.OpeningRoll((3, 3), None),
        e.OpeningRoll((6, 1), 0),
    ]
    assert st.match.rolls == ((3, 3), (6, 1))  # I-27: the draws in order, seat 0 first
    assert (st.match.turn, st.match.dice) == (0, (6, 1))


def test_casual_opening_is_as_wagered() -> None:
    st, _ = start(profiles.casual(), 1, 6)
    assert (st.match.phase, st.match.turn, st.match.dice) == (Phase.MOVING, 1, (6, 1))


def test_scored_opening_winner_then_rolls_both_dice() -> None:
    """I-14: the higher single die decides; that player then rolls (opening dice not played)."""
    st, _ = start(profiles.scored(3), 2, 5)
    assert (st.match.phase, st.match.turn, st.match.dice) == (Phase.AWAIT_ROLL, 1, None)
    out = ok(st, c.Roll(1), 100)
    assert out.state.match.rolls[-1] == out.state.match.dice
    rolled = out.events[0]
    assert isinstance(rolled, e.DiceRolled)
    assert rolled == e.DiceRolled(1, out.state.match.dice, legal_plays=rolled.legal_plays)


def _win_game(
    options: profiles.RulesOptions, winner: int
) -> tuple[TableState, tuple[e.Event, ...]]:
    """A game where `winner` bears off its last checker; returns (state, events)."""
    sides = [side({1: 1}), side({6: 5, 8: 3, 13: 7})]
    if winner == 1:
        sides.reverse()
    st = spot(options, (sides[0], sides[1]), turn=winner, dice=(2, 1), phase=Phase.MOVING)
    out = ok(st, c.Move(winner, 1, 0), 10)
    if out.state.match.phase in (Phase.MOVING, Phase.CONFIRMING):
        out = ok(out.state, c.Confirm(winner), 20)
    return out.state, out.events


def test_scored_later_game_previous_winner_rolls_first() -> None:
    st, _events = _win_game(profiles.scored(3), 1)
    assert st.match.phase is Phase.BETWEEN_GAMES
    nxt = clock(st)
    assert types(nxt.events) == ["game_started", "turn_started"]
    assert (nxt.state.match.turn, nxt.state.match.phase) == (1, Phase.AWAIT_ROLL)


def test_wagered_later_game_fresh_opening_after_three_seconds() -> None:
    """Row 'later games' (wagered): a fresh opening roll, dealt 3 s after the last game."""
    st, _events = _win_game(profiles.wagered(3, 100), 0)
    assert st.match.phase is Phase.BETWEEN_GAMES
    due = next_deadline(st.match)
    assert due is not None and due.kind == "next_game"
    assert due.at_ms == st.match.phase_started_ms + 3000
    nxt = clock(st)
    assert "opening_roll" in types(nxt.events)
    assert nxt.state.match.game_no == 2 and nxt.state.match.sides[0][5] == 5


def test_casual_plays_one_game_unless_a_length_is_set() -> None:
    """I-24: one game by default; a match length when the host sets one."""
    st, _events = _win_game(profiles.casual(), 0)
    assert st.match.phase is Phase.MATCH_OVER
    st3, _ = _win_game(profiles.casual(match_length=3), 0)
    assert st3.match.phase is Phase.BETWEEN_GAMES
