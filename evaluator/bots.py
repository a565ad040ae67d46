"""Computer seats on the evaluator (issue 28), each level defined by its measured error per
decision as GNU Backgammon judges it at 2-ply (`make bench`, benchmarks/bench_strength.py):

- `expert`: the evaluator's best play one roll deeper (1-ply over the best 0-ply candidates);
- `normal`: the 0-ply ranking with Gaussian noise of NORMAL_NOISE points of equity on each play
  (gnubg's "intermediate" band, 12-18 thousandths of a point per decision);
- `easy`: the same with EASY_NOISE (its "casual" band, 20-30).

Like every bot they see only their seat's view: the position and the dice rolled (I-31), never
the seed; the noise comes from the seat's own seeded `rng`, so a level's choices are fixed by
that seed.

The cube (every level's) weighs the evaluator's cubeless chances by match equity
(evaluator/match_equity.py): playing on, double/take and double/drop as chances to win the
match; the taker takes when taking wins the match more often than dropping; the doubler doubles
once doubling wins more than playing on and the taker is within MARKET of their drop point (a
double that would lose its market soon), or at once as the trailer after the Crawford game;
never when playing on for the gammon beats the drop (too good).
The dead-cube view (no value of owning the cube afterwards) is the known simplification."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from engine.bots import CubeAdvice, MatchScore, Strategy
from engine.movegen import Play
from engine.position import Position
from evaluator.evaluate import default
from evaluator.match_equity import match_winning_chance

MARKET = 0.03  # match winning chance: how close to the taker's drop point a double comes
NORMAL_NOISE = 0.03
EASY_NOISE = 0.07


def expert_bot(pos: Position, dice: tuple[int, int], rng: random.Random) -> Play | None:
    """The play the evaluator ranks first at 1-ply (deterministic: `rng` is unused)."""
    ranked = default().rank_plays_1ply(pos, dice)
    return ranked[0].play if ranked else None


def _noisy(sigma: float) -> Strategy:
    def choose(pos: Position, dice: tuple[int, int], rng: random.Random) -> Play | None:
        ranked = default().rank_plays(pos, dice)
        if not ranked:
            return None
        return max(ranked, key=lambda r: r.equity + rng.gauss(0, sigma)).play

    return choose


normal_bot = _noisy(NORMAL_NOISE)
easy_bot = _noisy(EASY_NOISE)
STRATEGIES: dict[str, Strategy] = {"expert": expert_bot, "normal": normal_bot, "easy": easy_bot}


def match_cube_values(pos: Position, score: MatchScore) -> tuple[float, float, float]:
    """The doubler's match winning chances (the player on roll in `pos`): no double, double and
    take, double and drop."""
    p = default().probabilities([pos])[0]
    no_double = _after(p, score, score.cube)
    take = _after(p, score, 2 * score.cube)
    drop = match_winning_chance(score.me_away - score.cube, score.them_away, _done(score))
    return no_double, take, drop


def match_cube(pos: Position, score: MatchScore) -> CubeAdvice:
    """From the side of the player on roll in `pos` (the doubler) at `score`."""
    no_double, take, drop = match_cube_values(pos, score)
    # The taker picks the lesser for the doubler; after the Crawford game the cube is worth
    # nothing to the trailer, who doubles at once.
    dead = score.crawford_done and score.them_away == 1
    better = min(take, drop) > no_double
    return CubeAdvice(double=better and (drop - take <= MARKET or dead), take=take <= drop)


def _done(score: MatchScore) -> bool:
    """After this game a 1-away player's Crawford game is behind (it is now, or was)."""
    return score.crawford_done or min(score.me_away, score.them_away) == 1


def _after(p: np.ndarray, score: MatchScore, cube: int) -> float:
    """The doubler's match winning chance once the game is played for `cube`."""
    done = _done(score)
    out = 0.0
    for column, points in enumerate((1, 2, 3)):
        won = match_winning_chance(score.me_away - points * cube, score.them_away, done)
        lost = match_winning_chance(score.me_away, score.them_away - points * cube, done)
        out += float(p[column]) * won + float(p[column + 3]) * lost
    return out


def seat(level: str) -> tuple[Strategy, Callable[[Position, MatchScore], CubeAdvice]]:
    """A computer seat's plays and cube at `level` (I-26, I-31); `normal` for an unknown one."""
    return STRATEGIES.get(level, normal_bot), match_cube
