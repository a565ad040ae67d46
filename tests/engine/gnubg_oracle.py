"""GNU Backgammon as a test-only oracle (PyPI `gnubg`, GPL). Never imported by services."""

from __future__ import annotations

from typing import Any

from engine.position import Position
from engine.steps import apply_step


def gnubg_module() -> Any:
    import gnubg

    return gnubg


def gnubg_plays(pid: str, dice: tuple[int, int]) -> list[tuple[int, ...]]:
    """gnubg's move tuples (from, to, from, to, ...) for position `pid` and `dice`."""
    g = gnubg_module()
    board = g.position_from_id(pid)
    moves = g.find_best_moves(board, g.cube_info(), g.eval_context(), dice)
    return [tuple(m["move"]) for m in moves]


def gnubg_result(pid: str, move: tuple[int, ...]) -> Position | None:
    """The position after gnubg's move, or None when the tuple is cut by a bear-off."""
    pos = Position.from_gnubg_id(pid)
    for i in range(0, len(move), 2):
        frm, to = move[i], move[i + 1]
        if to <= 0:
            return None
        pos = apply_step(pos, (frm, to))
    return pos
