"""A roll's lit points: engine.turn (a quiet roll counted point by point, else the dice every
legal play uses counted) vs the full search of every order.

Over 2,000 (position, dice) items from seeded random self-play, each round starting with the
caches empty but for the legal plays (a new turn misses them in a table replica too; its roll
has found the plays): the lit points
of the turn as rolled, by `Turn.lit` and by the reference search in
`tests/engine/test_turn_steps.py` (the rule as it reads; the engine's earlier way), alternately,
three rounds each, best round reported; the two must agree item by item.
"""

from __future__ import annotations

import time

from engine import turn as engine_turn
from engine.position import Position
from engine.turn import Turn
from tests.engine.corpus import selfplay_corpus
from tests.engine.test_turn_steps import _results as reference_results
from tests.engine.test_turn_steps import reaches, reference_lit

ROUNDS = 3
ITEMS = 2_000


def _clear(corpus: list[tuple[Position, tuple[int, int]]]) -> None:
    """Empty caches but the legal plays (a roll finds them anyway, for both ways alike)."""
    for cached in (engine_turn._plays, engine_turn._results, engine_turn._most, engine_turn._lit):
        cached.cache_clear()
    reaches.cache_clear()
    reference_results.cache_clear()
    for pos, roll in corpus:
        engine_turn._most(pos, roll)
        engine_turn._results(pos, roll)
        reference_results(pos, roll)


def run() -> None:
    corpus = selfplay_corpus(ITEMS, seed=11)
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(ROUNDS):
        _clear(corpus)
        started = time.perf_counter()
        lit = [Turn(pos, roll).lit() for pos, roll in corpus]
        ours.append((time.perf_counter() - started) / len(corpus))
        _clear(corpus)
        started = time.perf_counter()
        searched = [reference_lit(Turn(pos, roll)) for pos, roll in corpus]
        theirs.append((time.perf_counter() - started) / len(corpus))
        assert lit == searched
    print(f"   corpus: {len(corpus)} (position, dice) items, lit points identical")
    print(f"   Turn.lit (counted):        {min(ours) * 1e6:8.1f} us per roll")
    print(f"   full search (reference):   {min(theirs) * 1e6:8.1f} us per roll")
    print(f"   ratio engine/reference:    {min(ours) / min(theirs):8.2f}")
