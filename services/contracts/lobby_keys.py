"""The lobby's Redis keys the bots worker reads too: the contract between matchmaking (which
writes them) and the bots (which find their computer seats there), kept here so neither service
imports the other."""

from __future__ import annotations

LOBBY_TAG = "{lobby}"  # one hash slot for the lobby's shared sets (Redis Cluster)
BOT_TABLES = "bots:tables"  # tables with a computer seat, until the bots are done with them


def lobby_key(table_id: str) -> str:
    """A table's lobby document (JSON: its seats, options, status)."""
    return f"lobby:{LOBBY_TAG}:t:{table_id}"
