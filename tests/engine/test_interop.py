"""Match state export/import as GNU Backgammon position ID + match ID."""

from __future__ import annotations

import random

import pytest

from engine import profiles
from engine.interop import export_ids, import_ids
from engine.state import Phase
from tests.engine.gnubg_oracle import gnubg_module
from tests.engine.playout import play_match


def test_export_then_import_restores_the_spot_and_gnubg_reads_it() -> None:
    g = gnubg_module()
    compared = 0
    for seed in range(15):
        rng = random.Random(seed)
        run = play_match(
            profiles.casual(5, cube=True), rng.randbytes(16), rng, max_commands=rng.randint(1, 80)
        )
        m = run.state.match
        if m.phase not in (Phase.AWAIT_ROLL, Phase.MOVING, Phase.DOUBLE_OFFERED):
            continue
        pid, mid = export_ids(m)
        back = import_ids(m, pid, mid)
        assert (back.sides, back.turn, back.cube, back.cube_owner, back.score, back.phase) == (
            m.sides, m.turn, m.cube, m.cube_owner, m.score, m.phase,
        )  # fmt: skip
        if m.dice:
            assert back.dice in (m.dice, (m.dice[1], m.dice[0]))
        board = g.position_from_id(pid)
        assert tuple(board[1]) == m.position(m.turn).mover
        compared += 1
    assert compared >= 8


def test_import_refuses_a_different_match_length() -> None:
    run = play_match(profiles.casual(5), bytes(16), random.Random(1), max_commands=3)
    pid, mid = export_ids(run.state.match)
    other = play_match(profiles.casual(3), bytes(16), random.Random(1), max_commands=3).state.match
    with pytest.raises(ValueError, match="match to 5"):
        import_ids(other, pid, mid)
