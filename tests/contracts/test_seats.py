"""Computer seats' ids are made and read in one place (services/contracts/seats.py, I-31)."""

from __future__ import annotations

import pytest

from services.contracts.seats import computer_name, computer_seat, computer_table, is_computer


def test_a_computer_seat_id_reads_back_its_table_and_name() -> None:
    seat = computer_seat("normal", "t0a1-b2")  # a table id may hold the separator
    assert is_computer(seat)
    assert computer_table(seat) == "t0a1-b2"
    assert computer_name(seat) == "CPU (normal)"


@pytest.mark.parametrize(
    "player_id", ["p123", "cpu", "cpu-easy", "cpu--t1", "cpu-easy-", "xcpu-easy-t"]
)
def test_what_is_not_a_computer_seat_has_no_table(player_id: str) -> None:
    assert computer_table(player_id) is None
