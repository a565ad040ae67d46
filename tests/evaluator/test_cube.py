"""The computer seats' cube (issue 28): a match equity table of our own close to GNU
Backgammon's, and cube actions from the evaluator's chances weighed by it, the Crawford rule
included."""

from __future__ import annotations

import pytest

from engine.bots import CubeAdvice, MatchScore
from engine.position import Position
from evaluator.bots import match_cube
from evaluator.match_equity import match_winning_chance, post_crawford
from tests.engine.gnubg_oracle import gnubg_module

# One side home with every checker, the other's still back in the first's home board.
AHEAD = Position(
    (0, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 2, 2, 1, 1),
)
# A race the player on roll wins 72% of the time (the evaluator's): a double and a take.
RACE = Position(
    (0, 0, 0, 3, 3, 3, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    (0, 0, 0, 2, 2, 7, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
)


def test_the_match_equity_table_follows_gnubgs_to_within_a_sixtieth() -> None:
    pre, post, _ = gnubg_module().met(7)
    for me in range(1, 8):
        for them in range(1, 8):
            ours = match_winning_chance(me, them)
            assert abs(ours - pre[me - 1][them - 1]) < 0.016, (me, them, ours)
            assert abs(ours + match_winning_chance(them, me) - 1) < 1e-9  # zero-sum
        assert abs(post_crawford(me) - post[me - 1]) < 0.016, me
    assert match_winning_chance(0, 3) == 1.0 and match_winning_chance(4, -1) == 0.0
    assert match_winning_chance(3, 1, crawford_done=True) == post_crawford(3)


@pytest.mark.parametrize("score", [MatchScore(7, 7, 1), MatchScore(5, 3, 1), MatchScore(3, 3, 2)])
def test_a_position_far_ahead_is_too_good_or_a_drop_and_the_start_is_no_double(
    score: MatchScore,
) -> None:
    assert match_cube(Position.start(), score) == CubeAdvice(double=False, take=True)
    assert match_cube(AHEAD, score).take is False  # the one behind drops
    assert match_cube(AHEAD.flip(), score).double is False  # and never doubles


def test_a_race_a_little_ahead_is_a_double_and_a_take_early_in_a_long_match() -> None:
    assert match_cube(RACE, MatchScore(7, 7, 1)) == CubeAdvice(double=True, take=True)


def test_the_trailer_doubles_at_once_after_the_crawford_game() -> None:
    # 1-away leads 3-away after the Crawford game: the trailer has nothing to lose by doubling
    # (a double/take only makes them need fewer games), and the leader takes (a drop would
    # leave them facing 2-away, where the trailer needs one game).
    trailer = MatchScore(me_away=3, them_away=1, cube=1, crawford_done=True)
    advice = match_cube(Position.start(), trailer)
    assert advice == CubeAdvice(double=True, take=True)
