"""Computer levels against each other, and what a decision and an analysis cost.

Duels: each pair of levels over BG_BENCH_GAMES games (default 400; the issue's figure is 2,000)
with duplicate dice: every dice sequence is played twice with the seats swapped, so the luck
cancels and the difference is skill. Points per game are cubeless (1, 2 for a gammon, 3 for a
backgammon), with their standard error over the pairs. Then each level's decisions per second
on one core (and, from it, the computer seats one bots process could serve, at one decision per
seat every SEAT_PACE_S seconds and 70% of a core), and the analysis' decisions per second."""

from __future__ import annotations

import os
import random
import statistics
import time

from engine import bots
from engine.movegen import Play
from engine.position import Position
from evaluator.analysis import Game, Turn, analyse
from evaluator.bots import STRATEGIES, easy_bot, expert_bot, normal_bot

GAMES = int(os.environ.get("BG_BENCH_GAMES", "400"))
SEAT_PACE_S = 6.0  # a computer seat decides about once per 6 s in a live match (its turn)
DUELS = (
    ("expert", expert_bot, "normal", normal_bot),
    ("normal", normal_bot, "easy", easy_bot),
    ("easy", easy_bot, "random", bots.random_bot),
)


def game(
    first: bots.Strategy, second: bots.Strategy, dice: random.Random, log: list[Turn] | None = None
) -> int:
    """Points for `first` of one game (engine.bots.play_game), its turns kept in `log`."""

    def keep(seat: int, roll: tuple[int, int], play: Play | None) -> None:
        if log is not None:
            log.append(Turn(seat, roll, play.steps if play else ()))

    return bots.play_game(first, second, dice, keep)


def _positions(log: list[Turn]) -> list[tuple[Position, tuple[int, int]]]:
    """Each turn's position (from its mover) and dice, replayed from the start."""
    from engine.steps import apply_step

    sides = [Position.start().mover, Position.start().mover]
    out = []
    for turn in log:
        pos = Position(sides[turn.seat], sides[1 - turn.seat])
        out.append((pos, turn.dice))
        for step in turn.steps:
            pos = apply_step(pos, step)
        sides[turn.seat], sides[1 - turn.seat] = pos.mover, pos.opponent
    return out


def run() -> None:
    pairs = max(1, GAMES // 2)
    for name_a, a, name_b, b in DUELS:
        started = time.perf_counter()
        per_pair = [
            (game(a, b, random.Random(seed)) - game(b, a, random.Random(seed))) / 2
            for seed in range(pairs)
        ]
        mean = statistics.fmean(per_pair)
        error = statistics.stdev(per_pair) / len(per_pair) ** 0.5
        wins = sum(p > 0 for p in per_pair) / len(per_pair)
        print(
            f"   {name_a} vs {name_b}: {mean:+.3f} ± {error:.3f} points per game over "
            f"{2 * pairs} games ({wins:.0%} of pairs won; {time.perf_counter() - started:.0f} s)"
        )
    sample: list[list[Turn]] = []
    for seed in range(6):
        log: list[Turn] = []
        game(expert_bot, normal_bot, random.Random(100 + seed), log)
        sample.append(log)
    decisions = [item for log in sample for item in _positions(log)]
    for name, choose in STRATEGIES.items():
        rng = random.Random(3)
        started = time.process_time()
        for pos, dice in decisions:
            choose(pos, dice, rng)
        rate = len(decisions) / max(time.process_time() - started, 1e-9)
        seats = int(rate * SEAT_PACE_S * 0.7)
        print(f"   {name}: {rate:,.0f} decisions/s on one core (~{seats:,} seats per process)")
    started = time.process_time()
    analysed = analyse([Game((0, 0), False, tuple(log)) for log in sample], match_length=7)
    elapsed = time.process_time() - started
    print(
        f"   analysis: {len(analysed.decisions) / elapsed:,.0f} decisions/s "
        f"({len(analysed.decisions)} decisions of {len(sample)} games in {elapsed:.1f} s CPU)"
    )
