"""Computer seats' player ids, `cpu-<level>-<table>`: matchmaking makes them, the bots play them,
the gateway names them, the leaderboard never ranks them (I-31)."""

from __future__ import annotations

CPU_PREFIX = "cpu-"


def computer_seat(level: str, table_id: str) -> str:
    return f"{CPU_PREFIX}{level}-{table_id}"


def is_computer(player_id: str) -> bool:
    return player_id.startswith(CPU_PREFIX)


def computer_level(player_id: str) -> str:
    """`easy` or `normal` for a computer seat's id."""
    return player_id.split("-")[1]
