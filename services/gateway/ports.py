"""The gateway's ports: where identities come from, the accounts (services/gateway/adapters/
grpc_identity.py: the identity service's, which keeps them on its own database), presence
leases and streams
(services/gateway/adapters/redis_presence.py; in memory for the unit tests,
tests/gateway/memory_presence.py, held to it by a contract test), and a table's events for the
relay (services/gateway/feed.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bg.events.v1 import events_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.tokens import Identity


class IdentityProvider(Protocol):
    """Where player identities come from (guest logins here; an account system later)."""

    async def guest(self, name: str) -> Identity: ...


class AccountNames(Protocol):
    async def names(self, player_ids: list[str]) -> dict[str, str]: ...


@dataclass(frozen=True)
class Session:
    identity: Identity
    refresh_token: str
    refresh_expires_ms: int
    issued_ms: int = 0  # when this session was made: its access token is issued as of then


class AccountsPort(AccountNames, Protocol):
    """Player accounts: logins by device or email, sessions and their refresh tokens, names,
    deletion, the bans' record. A refusal is a ServiceError (its code is the client's)."""

    async def device_login(self, device_id: str, name: str) -> Session: ...
    async def email_login(self, email: str, password: str) -> Session: ...
    async def link_email(self, player_id: str, email: str, password: str) -> None: ...
    async def delete(self, player_id: str) -> None: ...
    async def set_name(self, player_id: str, name: str) -> Identity: ...
    async def refresh(self, token: str) -> Session: ...
    async def logout(self, token: str) -> None: ...
    async def banned_ids(self) -> list[str]: ...


Stream = tuple[str, str, str]  # table, player, stream


class PresenceRepository(Protocol):
    async def take_lease(self, gateway: str, expiry_ms: int) -> None:
        """Hold `gateway`'s lease until `expiry_ms`."""
        ...

    async def renew_lease(self, gateway: str, expiry_ms: int, now_ms: int) -> bool:
        """Extend a lease that has not lapsed by `now_ms`; False when it lapsed or was forgotten."""
        ...

    async def lapsed_gateways(self, now_ms: int, limit: int) -> list[str]:
        """Gateways whose lease lapsed before `now_ms`."""
        ...

    async def forget(self, gateway: str, now_ms: int) -> None:
        """Drop a lapsed gateway's lease (one whose streams are all closed)."""
        ...

    async def open_stream(self, gateway: str, table_id: str, player_id: str, stream: str) -> bool:
        """Record a stream under `gateway`; True when it is the (table, player)'s first."""
        ...

    async def close_stream(self, gateway: str, table_id: str, player_id: str, stream: str) -> bool:
        """Forget a stream; True when it was the (table, player)'s last. Idempotent."""
        ...

    async def streams_of(self, gateway: str, limit: int) -> list[Stream]:
        """Up to `limit` of the streams recorded under `gateway`."""
        ...

    async def tables_of(self, player_ids: list[str], now_ms: int) -> dict[str, set[str]]:
        """The tables each player has a stream to under a lease live at `now_ms` (LOBBY for a
        Friends stream); a player with none is left out."""
        ...


class EventSource(Protocol):
    async def events_between(
        self, table_id: str, after_seq: int, upto_seq: int
    ) -> list[events_pb2.TableEvent]: ...


class FriendsLobby(Protocol):
    """What friends ask of the lobby (services/gateway/adapters/friends_lobby.py)."""

    async def create(
        self, player_id: str, options: table_pb2.TableOptions, request_id: str
    ) -> matchmaking_pb2.LobbyTable:
        """A private table hosted by `player_id` (retry-safe under `request_id`)."""
        ...

    async def join(self, player_id: str, code: str, request_id: str) -> matchmaking_pb2.LobbyTable:
        """Seat `player_id` by the table's code (retry-safe under `request_id`)."""
        ...

    async def leave(self, player_id: str, table_id: str) -> None: ...

    async def table(self, table_id: str) -> matchmaking_pb2.LobbyTable | None:
        """The table as spectators may know it (watchable with the players' privacy), or None
        when the lobby does not know it."""
        ...

    async def seated(self, player_id: str) -> list[matchmaking_pb2.LobbyTable]:
        """The tables `player_id` sits at that are not closed (as spectators may know them)."""
        ...
