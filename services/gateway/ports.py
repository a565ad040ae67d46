"""The gateway's ports: where identities come from, the accounts (services/gateway/adapters/
grpc_identity.py: the identity service's, which keeps them on its own database), chat and
friends (services/gateway/adapters/grpc_social.py: the identity service's too), the lobby
(grpc_matchmaking.py), the boards and records (grpc_leaderboard.py), the analyses
(grpc_analysis.py), balances (grpc_wallet.py), presence leases and streams
(services/gateway/adapters/redis_presence.py; in memory for the unit tests,
tests/gateway/memory_presence.py, held to it by a contract test), and a table's events for the
relay (services/gateway/feed.py).

The services' calls take and answer their own messages: the gateway hands a player's request
on with the player's id set from the token, and the answer back as it is. A refusal is a
ServiceError (its code is the client's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bg.analysis.v1 import analysis_pb2
from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2
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
    email: str = ""  # the email the account signs in with, "" when none is saved
    restricted: bool = False  # to casual unrated play by an operator (issue 61)


class AccountsPort(AccountNames, Protocol):
    """Player accounts: logins by device or email, sessions and their refresh tokens, names,
    deletion, the bans' record. A refusal is a ServiceError (its code is the client's)."""

    async def device_login(self, device_id: str, name: str, exact: bool = False) -> Session: ...
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


class EventSource(Protocol):
    async def events_between(
        self, table_id: str, after_seq: int, upto_seq: int
    ) -> list[events_pb2.TableEvent]: ...
    async def last_seq(self, table_id: str) -> int | None: ...


class SocialPort(Protocol):
    """Chat and friends (bg.social.v1.SocialService): each call for the player the gateway
    authenticated; a refusal is a ServiceError (its code is the client's). What is live (chat on
    the streams here, Friends streams' views) is the gateway's own."""

    async def send_chat(
        self, player: str, request: gateway_pb2.SendChatRequest
    ) -> gateway_pb2.ChatMessage: ...
    async def chat_history(
        self, player: str, request: gateway_pb2.GetChatRequest
    ) -> gateway_pb2.ChatHistory: ...
    async def mute(
        self, player: str, request: gateway_pb2.MuteChatRequest
    ) -> gateway_pb2.MuteChatResponse: ...
    async def report(
        self, player: str, request: gateway_pb2.ReportChatRequest
    ) -> gateway_pb2.ReportChatResponse: ...
    async def hidden_from(self, sender: str, readers: list[str]) -> list[str]:
        """Of a message's readers here, those who muted or blocked its sender."""
        ...

    async def follow(
        self, player: str, request: gateway_pb2.FollowRequest
    ) -> gateway_pb2.FriendsView: ...
    async def block(
        self, player: str, request: gateway_pb2.BlockRequest
    ) -> gateway_pb2.FriendsView: ...
    async def view(self, player: str) -> gateway_pb2.FriendsView: ...
    async def challenge(
        self, player: str, request: gateway_pb2.ChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer: ...
    async def answer(
        self, player: str, request: gateway_pb2.AnswerChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer: ...


class LobbyPort(Protocol):
    """Tables, party codes, quick match, rematches and tournaments (bg.matchmaking.v1)."""

    async def create_table(
        self, request: matchmaking_pb2.CreateTableRequest
    ) -> matchmaking_pb2.LobbyTable: ...
    async def list_tables(
        self, request: matchmaking_pb2.ListTablesRequest
    ) -> matchmaking_pb2.ListTablesResponse: ...
    async def join_by_code(
        self, request: matchmaking_pb2.JoinByCodeRequest
    ) -> matchmaking_pb2.LobbyTable: ...
    async def quick_match(
        self, request: matchmaking_pb2.QuickMatchRequest
    ) -> matchmaking_pb2.LobbyTable: ...
    async def start_table(
        self, request: matchmaking_pb2.TableRequest
    ) -> matchmaking_pb2.LobbyTable: ...
    async def leave_table(
        self, request: matchmaking_pb2.TableRequest
    ) -> matchmaking_pb2.LobbyTable: ...
    async def get_table(
        self, request: matchmaking_pb2.TableRequest
    ) -> matchmaking_pb2.LobbyTable: ...
    async def rematch(
        self, request: matchmaking_pb2.TableRequest
    ) -> matchmaking_pb2.LobbyTable: ...
    async def list_tournaments(
        self, request: matchmaking_pb2.ListTournamentsRequest
    ) -> matchmaking_pb2.ListTournamentsResponse: ...
    async def get_tournament(
        self, request: matchmaking_pb2.TournamentRequest
    ) -> matchmaking_pb2.Tournament: ...
    async def register_tournament(
        self, request: matchmaking_pb2.TournamentRequest
    ) -> matchmaking_pb2.Tournament: ...
    async def unregister_tournament(
        self, request: matchmaking_pb2.TournamentRequest
    ) -> matchmaking_pb2.Tournament: ...


class BoardsPort(Protocol):
    """The boards, profiles and finished matches' records (bg.leaderboard.v1)."""

    async def top(self, request: leaderboard_pb2.TopRequest) -> leaderboard_pb2.TopResponse: ...
    async def rank(self, request: leaderboard_pb2.RankRequest) -> leaderboard_pb2.RankResponse: ...
    async def profile(
        self, request: leaderboard_pb2.ProfileRequest
    ) -> leaderboard_pb2.ProfileResponse: ...
    async def history(
        self, request: leaderboard_pb2.HistoryRequest
    ) -> leaderboard_pb2.HistoryResponse: ...
    async def changes(
        self, request: leaderboard_pb2.ChangesRequest
    ) -> leaderboard_pb2.ChangesResponse: ...
    async def archived_match(
        self, request: leaderboard_pb2.ArchivedMatchRequest
    ) -> leaderboard_pb2.ArchivedMatchResponse: ...


class AnalysesPort(Protocol):
    """Finished matches' analyses, a player's error rates, and hints (bg.analysis.v1)."""

    async def analysis(
        self, request: analysis_pb2.GetAnalysisRequest
    ) -> analysis_pb2.MatchAnalysis: ...
    async def player_trend(
        self, request: analysis_pb2.PlayerTrendRequest
    ) -> analysis_pb2.PlayerTrendResponse: ...
    async def hint(self, view: table_pb2.TableView, limit: int) -> gateway_pb2.HintResponse:
        """The best plays of the seat's roll from its own `view` (the evaluator is the analysis
        service's): HINT_NOT_ALLOWED, HINT_NOT_NOW, INVALID_LIMIT."""
        ...


class BalancesPort(Protocol):
    async def balance(self, player_id: str) -> int:
        """The player's diamonds (bg.wallet.v1)."""
        ...
