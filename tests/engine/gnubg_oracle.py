"""GNU Backgammon as a test-only oracle (PyPI `gnubg`, GPL). Never imported by services."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
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


def gnubg_import_mat(path: Path) -> dict[str, Any]:
    """GNU Backgammon's reading of a match file, from a gnubg of its own: importing a match
    changes the module's global state (match length, cube), which the other oracles rely on."""
    script = (
        "import json, sys, gnubg\n"
        "gnubg.command('import mat ' + sys.argv[1])\n"
        "m = gnubg.match()\n"
        "print('\\nMATCH-JSON ' + json.dumps(m, default=str))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120
    )
    marker = [line for line in done.stdout.splitlines() if line.startswith("MATCH-JSON ")]
    assert marker, done.stdout[-2000:] + done.stderr[-2000:]
    return dict(json.loads(marker[-1].removeprefix("MATCH-JSON ")))
