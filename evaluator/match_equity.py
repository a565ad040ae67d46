"""A match equity table: the chance to win the match from a score, for matches up to 25 points.

Computed here, not copied, from a model of a game: won or lost with even chances, by a gammon
with probability GAMMONS (from the Crawford game on, where the cube is out of play or turned
at once); before it the cube is turned (2) with probability CUBE_TURNED, and the game is worth
twice the cube with probability DOUBLED (gammons and cubes turned again, together). The Crawford
game is played without a cube; after it the trailer doubles at once and the leader takes or
drops, whichever is better for them. CUBE_TURNED and DOUBLED are fitted to GNU Backgammon's
default table (Kazaross-XG2), which this one follows to within 0.016 at every score up to
7-away each (tests/evaluator/test_cube.py checks it against the test-only gnubg)."""

from __future__ import annotations

from functools import cache

GAMMONS = 0.25
CUBE_TURNED = 0.74
DOUBLED = 0.49


@cache
def post_crawford(trailer: int) -> float:
    """The trailer's chance at `trailer`-away against a leader 1-away, after the Crawford game."""
    if trailer <= 0:
        return 1.0
    if trailer == 1:
        return 0.5
    take = 0.5 * ((1 - GAMMONS) * post_crawford(trailer - 2) + GAMMONS * post_crawford(trailer - 4))
    return min(take, post_crawford(trailer - 1))  # the leader may drop the double instead


@cache
def _pre(me: int, them: int) -> float:
    if me <= 0:
        return 1.0
    if them <= 0:
        return 0.0
    if me == them == 1:
        return 0.5
    if me == 1:  # the Crawford game: no cube
        g = GAMMONS
        return 0.5 + 0.5 * (
            (1 - g) * (1 - post_crawford(them - 1)) + g * (1 - post_crawford(them - 2))
        )
    if them == 1:
        return 1 - _pre(them, me)

    def game(cube: int) -> float:
        g = DOUBLED
        won = (1 - g) * _pre(me - cube, them) + g * _pre(me - 2 * cube, them)
        lost = (1 - g) * _pre(me, them - cube) + g * _pre(me, them - 2 * cube)
        return 0.5 * won + 0.5 * lost

    return (1 - CUBE_TURNED) * game(1) + CUBE_TURNED * game(2)


def match_winning_chance(me: int, them: int, crawford_done: bool = False) -> float:
    """The chance of the player `me`-away against `them`-away (points still needed; 0 or less:
    won) at the start of a game. `crawford_done`: a 1-away player's Crawford game is behind."""
    if me <= 0 or them <= 0:
        return 1.0 if me <= 0 else 0.0
    if crawford_done and them == 1 and me > 1:
        return post_crawford(me)
    if crawford_done and me == 1 and them > 1:
        return 1 - post_crawford(them)
    return _pre(me, them)
