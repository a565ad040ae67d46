"""Computer seats' player ids, `cpu-<level>-<table>`: matchmaking makes them, the bots play them,
the gateway names them, the leaderboard never ranks them (I-31)."""

from __future__ import annotations

CPU_PREFIX = "cpu-"
ACCOUNT_PREFIX = "p"  # an account's player id ("g": a guest's; CPU_PREFIX: a computer seat's)


def computer_seat(level: str, table_id: str) -> str:
    return f"{CPU_PREFIX}{level}-{table_id}"


def is_computer(player_id: str) -> bool:
    return player_id.startswith(CPU_PREFIX)


def computer_level(player_id: str) -> str:
    """`easy` or `normal` for a computer seat's id."""
    return player_id.split("-")[1]


def computer_table(player_id: str) -> str | None:
    """The table of a computer seat's id, or None for an id that is not one."""
    parts = player_id.split("-", 2)
    if len(parts) != 3 or f"{parts[0]}-" != CPU_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[2]


def computer_name(player_id: str) -> str:
    """What players see for a computer seat: `CPU (normal)`."""
    return f"CPU ({computer_level(player_id)})"
