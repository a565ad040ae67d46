"""Computer levels' strength: mean error per decision as GNU Backgammon judges it at 2-ply.

The decisions (position and dice, checker play only for now) come from seeded self-play of the
evaluator at 0-ply with a random play one turn in five, so the positions are the ones games reach;
only decisions with two or more distinct results count. gnubg (test-only, GPL) scores every
legal play at 2-ply (its own move filter: the candidates its 0-ply keeps, as its analysis
does); a choice's error is the best score minus the chosen play's, in thousandths of a point
(cubeless money equity), and each level's mean is printed beside gnubg 0-ply's own and a random
player's on the same decisions, with gnubg's bands (world class 2-5, expert 5-8, advanced 8-12,
intermediate 12-18, casual 18-26, beginner 26-35). Goals (issue 28): expert <= 6, normal 12-18,
easy 20-30. "old" are engine.bots' levels before the evaluator (still the scripted test
players' and the load tests')."""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable

from engine import bots
from engine.movegen import Play, legal_plays
from engine.position import Position
from evaluator.analysis import band
from evaluator.bots import STRATEGIES
from evaluator.evaluate import default

DECISIONS = int(os.environ.get("BG_BENCH_DECISIONS", "2000"))
CANDIDATES = 5  # 0-ply's best plays looked at again at 2-ply
Choose = Callable[[Position, tuple[int, int], random.Random], Play | None]


def decisions(count: int, seed: int = 28) -> list[tuple[Position, tuple[int, int]]]:
    rng = random.Random(seed)
    found: list[tuple[Position, tuple[int, int]]] = []
    while len(found) < count:
        pos = Position.start()
        for _ in range(300):
            if not sum(pos.mover) or not sum(pos.opponent):
                break
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            plays = legal_plays(pos, dice)
            if len({p.result for p in plays}) >= 2 and len(found) < count:
                found.append((pos, dice))
            if plays:
                ranked = default().rank_plays(pos, dice)
                pos = (rng.choice(plays) if rng.random() < 0.2 else ranked[0].play).result
            pos = pos.flip()
    return found


def _score(board_of: Callable[[Position], object], result: Position, ctx: object) -> float:
    """gnubg's equity of a play for its maker: minus the opponent's, who is then on roll."""
    import gnubg

    return -float(gnubg.evaluate(board_of(result.flip()), gnubg.cube_info(), ctx)[5])


def judge(
    items: list[tuple[Position, tuple[int, int]]], chosen: dict[str, list[Position]]
) -> dict[str, list[float]]:
    """Each level's error per decision. gnubg's own move filter: every distinct result scored
    at 0-ply, the best CANDIDATES of those and every level's choice again at 2-ply; the best
    2-ply score is the decision's best."""
    import gnubg

    zero, two = gnubg.eval_context(0, 0, 0, 1, 0.0), gnubg.eval_context(0, 2, 0, 1, 0.0)

    def board(pos: Position) -> object:
        return gnubg.position_from_id(pos.gnubg_id())

    lost: dict[str, list[float]] = {name: [] for name in chosen}
    for i, (pos, dice) in enumerate(items):
        results = list(dict.fromkeys(p.result for p in legal_plays(pos, dice)))
        at_zero = sorted(results, key=lambda r: -_score(board, r, zero))
        picks = {name: chosen[name][i] for name in chosen}
        candidates = set(at_zero[:CANDIDATES]) | set(picks.values())
        at_two = {r: _score(board, r, two) for r in candidates}
        best = max(at_two.values())
        for name, result in picks.items():
            lost[name].append(1000 * (best - at_two[result]))
    return lost


def run() -> None:
    import gnubg

    started = time.perf_counter()
    items = decisions(DECISIONS)
    print(f"   {len(items)} decisions from self-play ({time.perf_counter() - started:.1f} s)")
    zero = gnubg.eval_context(0, 0, 0, 1, 0.0)

    def gnubg_0ply(pos: Position, dice: tuple[int, int], rng: random.Random) -> Play | None:
        plays = legal_plays(pos, dice)
        return max(
            plays,
            key=lambda p: _score(lambda q: gnubg.position_from_id(q.gnubg_id()), p.result, zero),
        )

    def evaluator_0ply(pos: Position, dice: tuple[int, int], rng: random.Random) -> Play | None:
        ranked = default().rank_plays(pos, dice)
        return ranked[0].play if ranked else None

    levels: dict[str, Choose] = {
        **STRATEGIES,  # expert, normal, easy
        "0-ply": evaluator_0ply,
        "gnubg 0-ply": gnubg_0ply,
        "old normal": bots.normal_bot,
        "old easy": bots.easy_bot,
        "random": bots.random_bot,
    }
    chosen: dict[str, list[Position]] = {}
    took: dict[str, list[float]] = {}
    for name, choose in levels.items():
        rng = random.Random(1)
        chosen[name], took[name] = [], []
        for pos, dice in items:
            t = time.perf_counter()
            play = choose(pos, dice, rng)
            took[name].append(time.perf_counter() - t)
            assert play is not None
            chosen[name].append(play.result)
    started = time.perf_counter()
    lost = judge(items, chosen)
    print(f"   judged by gnubg 2-ply in {time.perf_counter() - started:.1f} s")
    print(f"   {'level':<12} {'error':>7} {'band':<13} {'p50 ms':>7} {'p99 ms':>7}")
    for name in levels:
        cuts = statistics.quantiles(took[name], n=100)
        mean = statistics.fmean(lost[name])
        p50, p99 = 1000 * cuts[49], 1000 * cuts[98]
        print(f"   {name:<12} {mean:7.1f} {band(mean):<13} {p50:7.2f} {p99:7.2f}")
