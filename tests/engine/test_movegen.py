"""Legal plays exactly as GNU Backgammon generates them (RULES.md "Moves")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from engine import Position, legal_plays
from engine.steps import step_die
from engine.turn import Turn
from tests.engine.corpus import selfplay_corpus
from tests.engine.gnubg_oracle import gnubg_plays, gnubg_result
from tests.engine.strategies import dice, positions

PERFT = Path(__file__).parent / "data" / "perft.txt"


def _rows() -> list[tuple[str, tuple[int, int], int]]:
    rows = []
    for line in PERFT.read_text().splitlines():
        if line and not line.startswith("#"):
            pid, d1, d2, n = line.split()
            rows.append((pid, (int(d1), int(d2)), int(n)))
    return rows


def _breakdown(pid: str, roll: tuple[int, int]) -> str:
    pos = Position.from_gnubg_id(pid)
    ours = sorted(p.notation(pos) for p in legal_plays(pos, roll))
    theirs = sorted(str(m) for m in gnubg_plays(pid, roll))
    return f"\nours ({len(ours)}): {ours}\ngnubg ({len(theirs)}): {theirs}"


def test_perft_file_covers_every_category() -> None:
    text = PERFT.read_text()
    rows = _rows()
    assert len(rows) >= 200
    for cat in ("contact", "bar-entry", "partial-entry", "blocked", "bear-off", "doubles"):
        assert f"# {cat}\n" in text


@pytest.mark.parametrize(("pid", "roll", "expected"), _rows())
def test_perft(pid: str, roll: tuple[int, int], expected: int) -> None:
    plays = legal_plays(Position.from_gnubg_id(pid), roll)
    assert len(plays) == expected, _breakdown(pid, roll)
    assert len(gnubg_plays(pid, roll)) == expected  # the file still agrees with gnubg


def test_differential_against_gnubg_on_10000_selfplay_items() -> None:
    """Counts everywhere; result sets wherever gnubg's tuples are not cut by a bear-off."""
    compared_sets = 0
    for pos, roll in selfplay_corpus(10_000, seed=99):
        pid = pos.gnubg_id()
        ours = legal_plays(pos, roll)
        theirs = gnubg_plays(pid, roll)
        assert len(ours) == len(theirs), (pid, roll, _breakdown(pid, roll))
        if all(p.result.mover_off == pos.mover_off for p in ours):
            assert {p.result for p in ours} == {gnubg_result(pid, m) for m in theirs}, (pid, roll)
            compared_sets += 1
    assert compared_sets > 8000


def test_start_31_in_canonical_order() -> None:
    """Snapshot of the canonical order (I-7): the timeout play is the first."""
    start = Position.start()
    got = [p.notation(start) for p in legal_plays(start, (3, 1))]
    assert got[:5] == ["24/23 24/21", "24/20", "24/21 8/7", "24/21 6/5", "24/23 13/10"]
    assert len(got) == 16
    assert legal_plays(start, (1, 3)) == legal_plays(start, (3, 1))


def test_higher_die_rule() -> None:
    """Only one die playable: the higher one when it can be played."""
    # Mover: one checker on 8; the 2-point... construct: checker on the 8-point; 6 lands on 2
    # (open) but then 5 cannot be played from 2 (no bear-off, another checker outside);
    # 5 from 8 lands on 3 which is blocked; so 6 alone or 5 alone -> must play 6 if possible.
    mover = [0] * 25
    mover[7] = 1  # 8-point
    mover[23] = 1  # 24-point, behind a block
    opponent = [0] * 25
    for own_point in (3, 6, 7, 8, 9, 10, 11):  # opponent points facing mover's 22..18, 17, 16 etc.
        opponent[own_point - 1] = 2
    pos = Position.from_sides(tuple(mover), tuple(opponent))
    plays = legal_plays(pos, (6, 5))
    assert len(plays) == len(gnubg_plays(pos.gnubg_id(), (6, 5)))
    assert all(len(p.steps) == len(plays[0].steps) for p in plays)


def test_no_legal_play_is_an_empty_list() -> None:
    mover = (0,) * 24 + (1,)  # on the bar
    opponent = (2, 2, 2, 2, 2, 2) + (0,) * 19  # opponent's home board closed
    assert legal_plays(Position(mover, opponent), (6, 5)) == []


def test_bad_dice_are_refused() -> None:
    with pytest.raises(ValueError, match=r"dice must be two integers 1\.\.6"):
        legal_plays(Position.start(), (0, 7))


@settings(max_examples=150, deadline=None)
@given(positions, dice)
def test_every_result_is_reachable_by_legal_steps(pos: Position, roll: tuple[int, int]) -> None:
    turn = Turn(pos, roll)
    results = turn.results
    for play in legal_plays(pos, roll):
        current = pos
        remaining = list((roll[0],) * 4 if roll[0] == roll[1] else roll)
        for step in play.steps:
            die = step_die(current, step, tuple(remaining))
            assert die is not None, (pos.gnubg_id(), roll, play.steps, step)
            remaining.remove(die)
            from engine.steps import apply_step

            current = apply_step(current, step)
        assert current == play.result and current in results
        assert sum(current.mover) + current.mover_off == 15
        assert sum(current.opponent) + current.opponent_off == 15
