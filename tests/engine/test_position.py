"""Positions and GNU Backgammon position IDs (RULES.md "Interop conventions")."""

from __future__ import annotations

import pytest
from hypothesis import given

from engine import Position, pip_count
from tests.engine.gnubg_oracle import gnubg_module
from tests.engine.strategies import positions

START_ID = "4HPwATDgc/ABMA"


def test_start_position_id() -> None:
    assert Position.start().gnubg_id() == START_ID
    assert Position.from_gnubg_id(START_ID) == Position.start()


def test_player_on_roll_is_the_side_gnubg_moves() -> None:
    """gnubg's IDs put the player not on roll first; we read them as gnubg does."""
    g = gnubg_module()
    mover = (0,) * 23 + (15, 0)  # 15 on the 24-point
    opponent = (0,) * 5 + (15,) + (0,) * 19  # 15 on the 6-point
    pos = Position(mover, opponent)
    assert pos.gnubg_id() == g.position_id((opponent, mover)) == "4P8PAAAAAID/Pw"
    moves = g.find_best_moves(
        g.position_from_id(pos.gnubg_id()), g.cube_info(), g.eval_context(), (2, 1)
    )
    assert {m["move"][0] for m in moves} == {24}  # gnubg moves our mover's checkers


@given(positions)
def test_id_round_trip_and_gnubg_agrees(pos: Position) -> None:
    pid = pos.gnubg_id()
    assert len(pid) == 14
    assert Position.from_gnubg_id(pid) == pos
    board = gnubg_module().position_from_id(pid)
    assert (tuple(board[1]), tuple(board[0])) == (pos.mover, pos.opponent)


@given(positions)
def test_at_most_fifteen_checkers_and_pips(pos: Position) -> None:
    assert sum(pos.mover) <= 15 and sum(pos.opponent) <= 15
    assert pos.mover_off == 15 - sum(pos.mover)
    assert pos.mover_pips == sum(n * (i + 1) for i, n in enumerate(pos.mover))
    assert pos.flip().opponent_pips == pos.mover_pips


def test_pip_count_of_start_and_bar() -> None:
    assert Position.start().mover_pips == 167
    assert pip_count((0,) * 24 + (1,)) == 25


@pytest.mark.parametrize(
    ("pid", "message"),
    [
        ("4HPwATDgc/ABM", "must be 14 characters"),
        ("4HPwATDgc/ABMAA", "must be 14 characters"),
        ("4HPwATDgc/AB!A", "invalid characters '!'"),
        ("//////////////", "ends in the middle of the board"),
        ("//8AAAAAAAAAAA", "opponent has 16 checkers"),
        ("AAAAAAAAAAAAgA", "checkers beyond both boards"),
        ("AAAAAAAAAAAAAA", None),  # empty board: valid (everything borne off)
    ],
)
def test_invalid_ids_raise_clear_errors(pid: str, message: str | None) -> None:
    if message is None:
        assert Position.from_gnubg_id(pid).mover_off == 15
        return
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Position.from_gnubg_id(pid)


def test_both_sides_on_one_point_is_invalid() -> None:
    mover = (1,) + (0,) * 24  # mover on its 1-point
    opponent = (0,) * 23 + (1, 0)  # opponent on its 24-point = the mover's 1-point
    pid = Position(mover, opponent).gnubg_id()
    with pytest.raises(ValueError, match="both sides have checkers on the mover's point 1"):
        Position.from_gnubg_id(pid)


def test_from_sides_validates() -> None:
    with pytest.raises(ValueError, match="16 checkers"):
        Position.from_sides((16,) + (0,) * 24, (0,) * 25)
    with pytest.raises(ValueError, match="negative"):
        Position.from_sides((-1,) + (0,) * 24, (0,) * 25)
