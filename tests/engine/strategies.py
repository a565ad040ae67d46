"""Hypothesis strategies for the engine, in one place (random legal positions and dice)."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from engine.movegen import legal_plays
from engine.position import Position

dice = st.tuples(st.integers(1, 6), st.integers(1, 6))


@st.composite
def playout_positions(draw: st.DrawFn) -> Position:
    """A position met after a random number of random legal plays from the start."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    plies = draw(st.integers(0, 120))
    pos = Position.start()
    for _ in range(plies):
        plays = legal_plays(pos, (rng.randint(1, 6), rng.randint(1, 6)))
        if plays:
            pos = rng.choice(plays).result
        if pos.mover_off == 15:
            break
        pos = pos.flip()
    return pos


@st.composite
def arbitrary_positions(draw: st.DrawFn) -> Position:
    """Any legal arrangement: up to 15 checkers a side, never both sides on one point."""
    mover = [0] * 25
    opponent = [0] * 25
    for side, other, flip in ((mover, opponent, False), (opponent, mover, True)):
        for _ in range(draw(st.integers(0, 15))):
            slot = draw(st.integers(0, 24))
            if slot < 24:
                facing = 23 - slot
                if other[facing]:
                    continue
            side[slot] += 1
        del flip
    return Position(tuple(mover), tuple(opponent))


positions = st.one_of(playout_positions(), arbitrary_positions())
