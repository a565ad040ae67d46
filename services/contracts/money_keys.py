"""The wallet idempotency keys of a match's money, shared by the table service (which places
holds), the wallet's table-events consumer and its reconciler (which capture, settle, refund):
each party derives the same key from the same facts, so whichever path comes first does the
work and the others replay it."""

from __future__ import annotations

# A deal (escrow, then the match) is driven on for this long and undone after it (matchmaking's
# saga). An escrow whose match the table service does not know may still be mid-deal until then,
# so the reconciler refunds an unknown match only when its escrow is well past this window.
DEAL_WINDOW_S = 30.0
UNKNOWN_REFUND_AFTER_S = 4 * DEAL_WINDOW_S
# The table service forgets a finished match (state, stream, record) this long after all its
# events are on Kafka; the wallet's reconciler must not read "unknown" as "never played" after it.
FINISHED_TTL_S = 3600


def raise_hold(match_id: str, game_no: int, cube: int) -> str:
    """The hold of a double offered in `game_no`, to `cube` if taken."""
    return f"raise:{match_id}:{game_no}:{cube}"


def boost_hold(match_id: str, game_no: int, seat: int, boost_no: int) -> str:
    """The hold of a seat's `boost_no`-th boost (1, 2) in `game_no`."""
    return f"boost:{match_id}:{game_no}:{seat}:{boost_no}"


def capture(hold_key: str) -> str:
    return f"capture:{hold_key}"


def settle(match_id: str) -> str:
    return f"settle:{match_id}"


def refund(match_id: str) -> str:
    return f"refund:{match_id}"


def table_of_match(match_id: str) -> str:
    """Matchmaking names a table's matches `<table_id>-<n>` (n = 1, 2, ... with rematches)."""
    return match_id.rsplit("-", 1)[0]


# A tournament's prize pool (services/wallet/pools.py), driven by matchmaking's director.


def buyin_hold(tournament_id: str, player_id: str, entry: int) -> str:
    """The hold of a player's `entry`-th registration (0, then 1 after a withdrawal, ...): a
    retried registration holds once, a registration after a withdrawal holds again."""
    return f"buyin:{tournament_id}:{player_id}:{entry}"


def release(hold_key: str) -> str:
    return f"release:{hold_key}"


def pool_start(tournament_id: str) -> str:
    return f"pool-start:{tournament_id}"


def prizes(tournament_id: str) -> str:
    return f"prizes:{tournament_id}"


def pool_refund(tournament_id: str) -> str:
    return f"pool-refund:{tournament_id}"
