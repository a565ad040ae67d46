"""wildbg's network inputs for a position, ported from its description (crates/engine/src/inputs.rs
on the `nets` branch): exact, since the weights were trained on them.

wildbg sees a position as 26 signed counts from the player on roll, `x`: index 0 is the
opponent's bar (negative), 1..24 are x's points (x's checkers positive, the opponent's
negative), 25 is x's bar. Each count becomes four inputs (the "TD" encoding): one checker, two
checkers, three or more, and how many past three. Contact networks (202 inputs): x's and the
opponent's checkers off, x's bar, x's points 1..24, then the opponent's bar and x's points
1..24 as the opponent's counts. Race networks (186): the checkers off, x's points 1..23, the
opponent on x's points 2..24 (in a race nobody is on a bar, x is not on 24, the opponent not on 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.position import BAR, CHECKERS, Position

CONTACT_INPUTS = 202
RACE_INPUTS = 186

# The four inputs for each count -15..15 (index count + 15); only one's own checkers count.
_TD = np.zeros((31, 4), dtype=np.float32)
_TD[16] = (1, 0, 0, 0)
_TD[17] = (0, 1, 0, 0)
for _n in range(3, 16):
    _TD[_n + 15] = (0, 0, 1, _n - 3)


def signed_counts(positions: Sequence[Position]) -> np.ndarray:
    """(N, 26) int8: each position as wildbg's counts, from its player on roll."""
    out = np.zeros((len(positions), 26), dtype=np.int8)
    if not positions:
        return out
    mover = np.array([p.mover for p in positions], dtype=np.int8)
    opponent = np.array([p.opponent for p in positions], dtype=np.int8)
    out[:, 1:25] = mover[:, :BAR]
    out[:, 25] = mover[:, BAR]
    out[:, 24:0:-1] -= opponent[:, :BAR]  # the opponent's point q is x's point 25 - q
    out[:, 0] = -opponent[:, BAR]
    return out


def _off(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mine = np.where(counts > 0, counts, 0).sum(axis=1)
    theirs = np.where(counts < 0, -counts, 0).sum(axis=1)
    return (CHECKERS - mine).astype(np.float32), (CHECKERS - theirs).astype(np.float32)


def _td(counts: np.ndarray) -> np.ndarray:
    """(N, K) counts -> (N, 4K) inputs."""
    return _TD[counts.astype(np.intp) + 15].reshape(len(counts), -1)


def contact_inputs(counts: np.ndarray) -> np.ndarray:
    x_off, o_off = _off(counts)
    return np.concatenate(
        [
            x_off[:, None],
            o_off[:, None],
            _td(counts[:, 25:26]),
            _td(counts[:, 1:25]),
            _td(-counts[:, 0:25]),
        ],
        axis=1,
    )


def race_inputs(counts: np.ndarray) -> np.ndarray:
    x_off, o_off = _off(counts)
    return np.concatenate(
        [x_off[:, None], o_off[:, None], _td(counts[:, 1:24]), _td(-counts[:, 2:25])], axis=1
    )


def is_race(counts: np.ndarray) -> np.ndarray:
    """(N,) bool: no checker of x behind the opponent's rearmost one (wildbg's game phase)."""
    index = np.arange(26)
    last_mine = np.where(counts > 0, index, -1).max(axis=1)
    first_theirs = np.where(counts < 0, index, 26).min(axis=1)
    return np.asarray(last_mine < first_theirs)
