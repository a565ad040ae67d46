"""What a player's client reads off a tournament's bracket (bg.matchmaking.v1.Tournament)."""

from __future__ import annotations

from collections.abc import Collection

from bg.matchmaking.v1 import matchmaking_pb2


def next_match(
    found: matchmaking_pb2.Tournament, player_id: str, played: Collection[str] = ()
) -> matchmaking_pb2.TournamentMatch | None:
    """The player's match that is dealt and undecided (its table not in `played`), if any."""
    for m in found.matches:
        seated = player_id in (m.top_id, m.bottom_id)
        if seated and m.table_id and not m.winner_id and m.table_id not in played:
            return m
    return None


def done_with(found: matchmaking_pb2.Tournament, player_id: str) -> bool:
    """Over for this player: the tournament ended, or they are out (ranked below 1)."""
    out = any(r.player_id == player_id and r.rank != 1 for r in found.ranks)
    return out or found.status in ("finished", "cancelled")


def settled(found: matchmaking_pb2.Tournament) -> bool:
    """Its money is final: no pool (casual, scored), or the pool paid or refunded. A finished
    wagered tournament pays its prizes a moment after its final (later if the wallet is away)."""
    return found.money not in ("open", "running")
