"""Seeded corpora of (position, dice) from random self-play: shared by tests and benchmarks."""

from __future__ import annotations

import random

from engine.movegen import legal_plays
from engine.position import Position


def selfplay_corpus(count: int, seed: int = 1) -> list[tuple[Position, tuple[int, int]]]:
    """`count` (position, dice) items met in random games (random legal plays)."""
    rng = random.Random(seed)
    out: list[tuple[Position, tuple[int, int]]] = []
    while len(out) < count:
        pos = Position.start()
        while len(out) < count:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            out.append((pos, dice))
            plays = legal_plays(pos, dice)
            if plays:
                pos = rng.choice(plays).result
            if pos.mover_off == 15:
                break
            pos = pos.flip()
    return out


def category(pos: Position, dice: tuple[int, int]) -> str:
    """The perft category of an item (first that applies)."""
    me = pos.mover
    plays = legal_plays(pos, dice)
    if not plays:
        return "blocked"
    if me[24] >= 2:
        return "partial-entry" if any(p.result.mover[24] for p in plays) else "bar-entry"
    if me[24]:
        return "bar-entry"
    if not any(me[6:25]):
        return "bear-off"
    if dice[0] == dice[1]:
        return "doubles"
    return "contact"
