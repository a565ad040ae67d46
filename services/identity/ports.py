"""The identity service's ports: its accounts (`AccountsRepository`) and the operators' audit log
(`AuditRepository`), and the types they speak in, on SQL (services/identity/adapters/
sql_accounts.py, sql_audit.py: SQLite or PostgreSQL); for friends, where players are
(`PlayerPresence`, from the gateways' presence in Redis) and the lobby (`FriendsLobby`, the
matchmaking service)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2


@dataclass(frozen=True)
class Account:
    player_id: str
    name: str


@dataclass(frozen=True)
class Session:
    account: Account
    refresh_token: str
    refresh_expires_ms: int
    granted: bool = True  # False: the starter grant is still to be credited
    issued_ms: int = 0  # when this session was made: its access token is issued as of then
    email: str = ""  # the email the account signs in with, "" when none is saved
    restricted: bool = False  # to casual unrated play by an operator (issue 61)


class AccountRecord(TypedDict):
    """What operators see of an account (bg.identity.v1.AccountRecord)."""

    display_name: str
    kind: str  # guest, device, email or account
    created_ms: int
    deleted: bool
    banned: bool
    ban_reason: str
    restricted: bool  # to casual unrated play (issue 61)
    restriction_reason: str


Detail = dict[str, object]  # what an operator's action did, kept as JSON


class AccountsRepository(Protocol):
    """Player accounts: logins by device or email, sessions and their refresh tokens, names,
    deletion, bans. A refusal is a ServiceError (its code is the client's)."""

    async def device_login(self, device_id: str, name: str, exact: bool = False) -> Session: ...
    async def email_login(self, email: str, password: str) -> Session: ...
    async def link_email(self, player_id: str, email: str, password: str) -> None: ...
    async def granted(self, player_id: str) -> None: ...
    async def delete(self, player_id: str) -> None: ...
    async def set_name(self, player_id: str, name: str) -> Account: ...
    async def names(self, player_ids: list[str]) -> dict[str, str]: ...
    async def refresh(self, token: str) -> Session: ...
    async def logout(self, token: str) -> None: ...
    async def ban(self, player_id: str, operator: str, reason: str) -> None: ...
    async def unban(self, player_id: str) -> bool: ...
    async def is_banned(self, player_id: str) -> bool: ...
    async def banned_ids(self) -> list[str]: ...
    async def restrict(self, player_id: str, operator: str, reason: str) -> bool: ...
    async def unrestrict(self, player_id: str) -> bool: ...
    async def restricted_ids(self) -> list[str]: ...
    async def record(self, player_id: str) -> AccountRecord: ...


class AuditRepository(Protocol):
    """The admin audit log: every operator action with who, when, what, why and how it ended."""

    async def record(
        self,
        operator: str,
        action: str,
        target: str,
        reason: str,
        outcome: str,
        detail: Detail | None = None,
    ) -> int:
        """A new entry; its id."""
        ...

    async def finish(self, entry: int, outcome: str, detail: Detail) -> None:
        """How the action an entry announced ended."""
        ...

    async def entries(self, limit: int = 50, target: str = "") -> list[Any]:
        """Newest first (rows with the fields of bg.admin.v1.AuditEntry); only those about
        `target` when given."""
        ...


class PlayerPresence(Protocol):
    """Where players are, as the gateways record their live streams
    (services/identity/adapters/redis_presence.py reads what services/gateway/presence.py
    writes)."""

    async def tables_of(self, player_ids: list[str], now_ms: int) -> dict[str, set[str]]:
        """The tables each player has a stream to under a gateway lease live at `now_ms` (""
        for a Friends stream); a player with none is left out."""
        ...


class FriendsLobby(Protocol):
    """What friends ask of the lobby (services/identity/adapters/friends_lobby.py)."""

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

    async def in_play(self, table_id: str) -> bool:
        """Whether a dealt table's match is still being played: the lobby keeps a table dealt
        after its match ends (until a rematch or a leave), the table service knows it is over."""
        ...
