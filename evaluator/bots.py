"""Computer seats on the evaluator (issue 28), each level defined by its measured error per
decision as GNU Backgammon judges it at 2-ply (`make bench`, benchmarks/bench_strength.py):

- `expert`: the evaluator's best play one roll deeper (1-ply over the best 0-ply candidates);
- `normal`: the 0-ply ranking with Gaussian noise of NORMAL_NOISE points of equity on each play
  (gnubg's "intermediate" band, 12-18 thousandths of a point per decision);
- `easy`: the same with EASY_NOISE (its "casual" band, 20-30).

Like every bot they see only their seat's view: the position and the dice rolled (I-31), never
the seed; the noise comes from the seat's own seeded `rng`, so a level's choices are fixed by
that seed.

The cube is money-game style for now, the same at any match score: double from a cubeless
equity of 0.4 (the other side is near its take point) up to 1.0 (past that, play on for the
gammon: too good to double); take while the taker's cubeless equity is at least -0.5 (a take is
worth -1 per point doubled, a drop -1: cubeless, -0.5 is where the two meet)."""

from __future__ import annotations

import random
from collections.abc import Callable

from engine.bots import CubeAdvice, Strategy
from engine.movegen import Play
from engine.position import Position
from evaluator.evaluate import default, equities

DOUBLE_FROM = 0.4
TOO_GOOD = 1.0
TAKE_FROM = -0.5
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


def expert_cube(pos: Position) -> CubeAdvice:
    """From the side of the player on roll (the doubler) in `pos`."""
    equity = float(equities(default().probabilities([pos]))[0])
    return CubeAdvice(double=DOUBLE_FROM <= equity <= TOO_GOOD, take=-equity >= TAKE_FROM)


def seat(level: str) -> tuple[Strategy, Callable[[Position], CubeAdvice]]:
    """A computer seat's plays and cube at `level` (I-26, I-31); `normal` for an unknown one."""
    return STRATEGIES.get(level, normal_bot), expert_cube
