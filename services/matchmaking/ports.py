"""Matchmaking's ports: the lobby's state (`LobbyRepository`, on Redis in the service,
services/matchmaking/adapters/redis_lobby.py; in memory for the unit tests,
tests/matchmaking/memory_lobby.py, held to it by a contract test) and the services a deal calls
(services/matchmaking/adapters/grpc_clients.py)."""

from __future__ import annotations

from typing import Literal, Protocol

from bg.table.v1 import table_pb2
from services.common.log_port import Receipt

PlayerSet = Literal["hosting", "seated"]  # the tables a player opened / sits at


# A player's entries held by compare-and-set: a client request id's answer; the wagered match
# the player sits at.
HoldKind = Literal["request", "wagered"]


class LobbyRepository(Protocol):
    async def read(self, table_id: str) -> str | None:
        """A table's document (JSON), or None."""
        ...

    async def create(self, table_id: str, doc: str, open_since_ms: int | None) -> None:
        """A new document, listed as open from `open_since_ms` (None: not listed)."""
        ...

    async def create_if_absent(self, table_id: str, doc: str) -> bool:
        """A new unlisted document, only if there is none under `table_id` (True if written)."""
        ...

    async def save_if_unchanged(
        self,
        table_id: str,
        read: str,
        doc: str,
        open_since_ms: int | None,
        dealing_since_ms: int | None,
    ) -> bool:
        """Write `doc` if the document is still `read`; keep the open and dealing indexes."""
        ...

    async def reserve_code(self, code: str, table_id: str, ttl_s: int) -> bool:
        """Take a party code for a table unless it is taken."""
        ...

    async def code_table(self, code: str) -> str | None: ...

    async def add_player_table(self, kind: PlayerSet, player_id: str, table_id: str) -> None: ...

    async def player_tables(self, kind: PlayerSet, player_id: str) -> list[str]: ...

    async def drop_player_table(self, kind: PlayerSet, player_id: str, table_id: str) -> None: ...

    async def open_tables(self, limit: int) -> list[str]:
        """Listed open tables, newest first."""
        ...

    async def drop_open(self, table_id: str) -> None: ...

    async def mark_live(self, table_id: str, at_ms: int) -> None: ...

    async def live_tables(self, since_ms: int, limit: int) -> list[str]:
        """Tables dealt since `since_ms`, newest first (older ones drop off)."""
        ...

    async def drop_live(self, table_id: str) -> None: ...

    async def dealing_before(self, cutoff_ms: int, limit: int) -> list[str]:
        """Tables whose deal started before `cutoff_ms`, oldest first."""
        ...

    async def drop_dealing(self, table_id: str) -> None: ...

    async def pop_waiting(self, queue: str) -> str | None:
        """The quick-match table waiting longest in `queue`, taken off it."""
        ...

    async def push_waiting(self, queue: str, table_id: str) -> None: ...

    async def enqueue_if_empty(self, queue: str, table_id: str) -> bool:
        """Queue `table_id` unless someone waits already (atomic)."""
        ...

    async def add_bot_table(self, table_id: str) -> None:
        """A table with a computer seat, for the bots worker."""
        ...

    async def scored_table(self, player_id: str) -> str | None:
        """The player's scored table in play (I-18), or None."""
        ...

    async def set_scored_table(self, player_id: str, table_id: str, ttl_s: int) -> None: ...

    async def clear_scored_table(self, player_id: str) -> None: ...

    async def hold(
        self, kind: HoldKind, player_id: str, key: str, value: str, replacing: str, ttl_s: int
    ) -> str | None:
        """Set the player's `kind` entry `key` to `value` if it is unset, holds `replacing`, or
        holds `value` already (atomic); None then, else the value that holds it."""
        ...

    async def release(self, kind: HoldKind, player_id: str, key: str, value: str) -> None:
        """Delete the entry if it still holds `value`."""
        ...

    async def held(self, kind: HoldKind, player_id: str, key: str) -> str | None: ...

    async def restricted(self, player_ids: list[str]) -> list[str]:
        """Those of `player_ids` an operator restricted to casual unrated play (issue 61)."""
        ...


class WalletPort(Protocol):
    async def escrow(self, key: str, match_id: str, players: list[str], stake: int) -> None: ...
    async def refund(self, key: str, match_id: str) -> None: ...
    async def balance(self, player_id: str) -> int: ...


class PoolPort(Protocol):
    """A wagered tournament's money on the wallet (services/wallet/pools.py): each call carries
    its idempotency key (services/contracts/money_keys.py)."""

    async def hold_buyin(
        self, key: str, tournament_id: str, player_id: str, amount: int
    ) -> None: ...

    async def release(self, key: str, hold_key: str) -> None: ...

    async def start_pool(self, key: str, tournament_id: str, players: list[str]) -> tuple[int, int]:
        """Capture the field's buy-ins; returns (the prize money, the house fee)."""
        ...

    async def pay_prizes(self, key: str, tournament_id: str, prizes: dict[str, int]) -> None: ...

    async def refund_pool(self, key: str, tournament_id: str) -> None: ...


class ResultsPort(Protocol):
    """Finished tournaments' results to the event log (services/matchmaking/adapters/
    tournament_events.py)."""

    async def publish(self, tournament_id: str, value: bytes) -> Receipt:
        """Send one record, acknowledged by the log: its receipt."""
        ...

    async def read(self, receipt: Receipt) -> bool | None:
        """True once every group read it (or the log keeps it: KEPT); False when the log lost
        it; None meanwhile."""
        ...


class TablePort(Protocol):
    async def create_match(
        self, table_id: str, match_id: str, players: list[str], options: table_pb2.TableOptions
    ) -> str: ...
    async def leave(self, table_id: str, player_id: str, seat: int) -> None: ...
    async def rematch_agreed(self, table_id: str, player_id: str) -> bool: ...
    async def match_exists(self, table_id: str, match_id: str) -> bool: ...
    async def match_in_play(self, table_id: str, match_id: str) -> bool: ...
    async def match_winner(self, table_id: str, match_id: str) -> str | None:
        """The winner of an ended match; "" for one closed undecided; None while it plays (or
        the table service does not know it)."""
        ...


class TournamentRepository(Protocol):
    """Tournaments' documents (services/matchmaking/adapters/redis_tournaments.py)."""

    async def read(self, tournament_id: str) -> str | None: ...

    async def read_many(self, tournament_ids: list[str]) -> list[str | None]:
        """Several documents in one round trip (None for one that expired)."""
        ...

    async def create(self, tournament_id: str, doc: str, created_ms: int) -> bool:
        """A new document, listed; False (nothing written) if the id is taken."""
        ...

    async def save_if_unchanged(self, tournament_id: str, read: str, doc: str) -> bool: ...

    async def newest(self, limit: int) -> list[str]:
        """Tournament ids, newest first."""
        ...

    async def unfinished(self) -> list[str]:
        """The ids of tournaments registering or running: the director's work."""
        ...

    async def mark_finished(self, tournament_id: str) -> None: ...

    async def claim_player(self, player_id: str, tournament_id: str, replace: str) -> str | None:
        """Mark the player as in `tournament_id` (one unfinished tournament at a time); None if
        done, else the tournament that holds them (`replace` may be taken over)."""
        ...

    async def release_player(self, player_id: str, tournament_id: str) -> None: ...

    async def player_tournament(self, player_id: str) -> str | None: ...
