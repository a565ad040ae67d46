"""The gateway's application layer: one handler per method of bg.gateway.v1.GatewayService,
called alike by the gRPC servicer (services/gateway/api.py) and the WebSocket
(services/gateway/ws.py), with no transport in it: each takes the request and the `Caller`
(services/gateway/callers.py: the player id always comes from the verified token, never from
the request), answers or raises a ServiceError; a stream also takes where its messages go.

Signing in is services/gateway/sign_in.py, the streams services/gateway/play_streams.py; the
rest pass the call on to the service that owns it, with the caller's id in it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from bg.table.v1 import table_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
    remote_call,
)
from services.gateway import hints, match_export
from services.gateway.callers import Caller, Callers
from services.gateway.friends_streams import FriendsStreams
from services.gateway.hints import Hints
from services.gateway.lobby_views import LobbyViews
from services.gateway.metrics import GatewayMetrics
from services.gateway.names import DisplayNames
from services.gateway.play_streams import PlayStreams
from services.gateway.ports import SocialPort
from services.gateway.privacy import Privacy
from services.gateway.sign_in import SignIn
from services.gateway.table_calls import TableCalls

call = remote_call


# What a spectator's check answers for a table they may not see (or one the lobby forgot).
REFUSED = (
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
)


class GatewayHandlers:
    def __init__(
        self,
        callers: Callers,
        sign_in: SignIn,
        streams: PlayStreams,
        lobby: matchmaking_pb2_grpc.MatchmakingServiceAsyncStub,
        wallet: wallet_pb2_grpc.WalletServiceAsyncStub,
        tables: TableCalls,
        boards: leaderboard_pb2_grpc.LeaderboardServiceAsyncStub,
        names: DisplayNames,
        privacy: Privacy,
        analyses: analysis_pb2_grpc.AnalysisServiceAsyncStub,
        social: SocialPort,
        friends: FriendsStreams,
        metrics: GatewayMetrics | None = None,
    ) -> None:
        self.callers = callers
        self.sign_in = sign_in
        self.streams = streams
        self.lobby = lobby
        self.wallet = wallet
        self.tables = tables  # a table's calls go to its owner first
        self.boards = boards
        self.names = names
        self.privacy = privacy
        self.analyses = analyses
        self.social = social  # chat and friends: the identity service's
        self.friends = friends  # the Friends streams here, woken by changes made through here
        self.metrics = metrics or GatewayMetrics.unregistered()
        self.shown = LobbyViews(privacy, tables)
        self.hints = Hints()

    # -- session -----------------------------------------------------------------------------

    async def Login(
        self, request: gateway_pb2.LoginRequest, caller: Caller
    ) -> gateway_pb2.LoginResponse:
        self.callers.peer(caller, request)
        kind = "device" if request.device_id else "email" if request.email else "guest"
        return await self._signed_in(kind, self.sign_in.login(request))

    async def ServiceLogin(
        self, request: gateway_pb2.ServiceLoginRequest, caller: Caller
    ) -> gateway_pb2.LoginResponse:
        self.callers.peer(caller, request)
        signed_in = self.sign_in.service_login(request, caller.service_credential)
        return await self._signed_in("service", signed_in)

    async def Refresh(
        self, request: gateway_pb2.RefreshRequest, caller: Caller
    ) -> gateway_pb2.LoginResponse:
        self.callers.peer(caller, request)
        return await self._signed_in("refresh", self.sign_in.refresh(request.refresh_token))

    async def _signed_in(
        self, kind: str, signing_in: Awaitable[gateway_pb2.LoginResponse]
    ) -> gateway_pb2.LoginResponse:
        try:
            answer = await signing_in
        except ServiceError as err:
            self.metrics.logins.labels(kind, err.code).inc()
            raise
        self.metrics.logins.labels(kind, "ok").inc()
        return answer

    async def Logout(
        self, request: gateway_pb2.LogoutRequest, caller: Caller
    ) -> gateway_pb2.LogoutResponse:
        self.callers.peer(caller, request)
        await self.sign_in.logout(request.refresh_token)
        return gateway_pb2.LogoutResponse()

    async def DeleteAccount(
        self, request: gateway_pb2.DeleteAccountRequest, caller: Caller
    ) -> gateway_pb2.DeleteAccountResponse:
        await self.sign_in.delete_account(self.callers.player(caller, request))
        return gateway_pb2.DeleteAccountResponse()

    async def LinkEmail(
        self, request: gateway_pb2.LinkEmailRequest, caller: Caller
    ) -> gateway_pb2.LinkEmailResponse:
        player = self.callers.player(caller, request)
        await self.sign_in.link_email(player, request.email, request.password)
        return gateway_pb2.LinkEmailResponse()

    async def SetDisplayName(
        self, request: gateway_pb2.SetDisplayNameRequest, caller: Caller
    ) -> gateway_pb2.LoginResponse:
        player = self.callers.player(caller, request)
        return await self.sign_in.set_name(player, request.display_name)

    # -- lobby -------------------------------------------------------------------------------

    async def CreateTable(
        self, request: matchmaking_pb2.CreateTableRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        _retry_safe(request)
        return await self.shown.shown(await call(self.lobby.CreateTable(request, timeout=10)))

    async def ListTables(
        self, request: matchmaking_pb2.ListTablesRequest, caller: Caller
    ) -> matchmaking_pb2.ListTablesResponse:
        request.player_id = self.callers.player(caller, request)
        reply = await call(self.lobby.ListTables(request, timeout=10))
        return await self.shown.listed(reply, request)

    async def JoinByCode(
        self, request: matchmaking_pb2.JoinByCodeRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        _retry_safe(request)
        return await self.shown.shown(await call(self.lobby.JoinByCode(request, timeout=10)))

    async def QuickMatch(
        self, request: matchmaking_pb2.QuickMatchRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        _retry_safe(request)
        return await self.shown.shown(await call(self.lobby.QuickMatch(request, timeout=10)))

    async def StartTable(
        self, request: matchmaking_pb2.TableRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        return await self.shown.shown(await call(self.lobby.StartTable(request, timeout=10)))

    async def LeaveTable(
        self, request: matchmaking_pb2.TableRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        return await self.shown.shown(await call(self.lobby.LeaveTable(request, timeout=10)))

    async def GetTable(
        self, request: matchmaking_pb2.TableRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        return await self.shown.shown(await call(self.lobby.GetTable(request, timeout=10)))

    # -- tournaments -------------------------------------------------------------------------

    async def ListTournaments(
        self, request: matchmaking_pb2.ListTournamentsRequest, caller: Caller
    ) -> matchmaking_pb2.ListTournamentsResponse:
        self.callers.player(caller, request)
        return await call(self.lobby.ListTournaments(request, timeout=10))

    async def GetTournament(
        self, request: matchmaking_pb2.TournamentRequest, caller: Caller
    ) -> matchmaking_pb2.Tournament:
        request.player_id = self.callers.player(caller, request)
        return await call(self.lobby.GetTournament(request, timeout=10))

    async def RegisterTournament(
        self, request: matchmaking_pb2.TournamentRequest, caller: Caller
    ) -> matchmaking_pb2.Tournament:
        request.player_id = self.callers.player(caller, request)
        return await call(self.lobby.RegisterTournament(request, timeout=10))

    async def UnregisterTournament(
        self, request: matchmaking_pb2.TournamentRequest, caller: Caller
    ) -> matchmaking_pb2.Tournament:
        request.player_id = self.callers.player(caller, request)
        return await call(self.lobby.UnregisterTournament(request, timeout=10))

    # -- tables, records, boards -------------------------------------------------------------

    async def GetView(
        self, request: gateway_pb2.ViewRequest, caller: Caller
    ) -> table_pb2.TableView:
        return await self._own_view(self.callers.player(caller, request), request.table_id)

    async def _own_view(self, player: str, table_id: str) -> table_pb2.TableView:
        """The caller's own seat's view (the table refuses one that is not theirs)."""
        request = table_pb2.GetViewRequest(table_id=table_id, player_id=player)
        return await self.tables.view(request)

    async def GetMatchRecord(
        self, request: table_pb2.GetMatchRecordRequest, caller: Caller
    ) -> table_pb2.MatchRecord:
        player = self.callers.player(caller, request)
        record = await self.tables.record(request)
        if player not in record.player_ids:
            raise PermissionDenied("NOT_SEATED", "only the match's players get its record")
        return record

    async def GetLeaderboard(
        self, request: leaderboard_pb2.TopRequest, caller: Caller
    ) -> leaderboard_pb2.TopResponse:
        self.callers.player(caller, request)
        return await call(self.boards.Top(request, timeout=10))

    async def GetRank(
        self, request: leaderboard_pb2.RankRequest, caller: Caller
    ) -> leaderboard_pb2.RankResponse:
        player = self.callers.player(caller, request)
        request.player_id = request.player_id or player
        return await call(self.boards.Rank(request, timeout=10))

    async def GetProfile(
        self, request: leaderboard_pb2.ProfileRequest, caller: Caller
    ) -> leaderboard_pb2.ProfileResponse:
        player = self.callers.player(caller, request)
        request.player_id = request.player_id or player
        return await call(self.boards.Profile(request, timeout=10))

    async def GetMatchHistory(
        self, request: leaderboard_pb2.HistoryRequest, caller: Caller
    ) -> leaderboard_pb2.HistoryResponse:
        player = self.callers.player(caller, request)
        request.player_id = request.player_id or player  # a profile's recent matches
        return await call(self.boards.History(request, timeout=10))

    async def GetMatchChanges(
        self, request: leaderboard_pb2.ChangesRequest, caller: Caller
    ) -> leaderboard_pb2.ChangesResponse:
        request.player_id = self.callers.player(caller, request)  # your own changes only
        return await call(self.boards.Changes(request, timeout=10))

    async def GetErrorTrend(
        self, request: analysis_pb2.PlayerTrendRequest, caller: Caller
    ) -> analysis_pb2.PlayerTrendResponse:
        request.player_id = self.callers.player(caller, request)  # your own course only
        return await call(self.analyses.PlayerTrend(request, timeout=10))

    async def GetArchivedMatch(
        self, request: leaderboard_pb2.ArchivedMatchRequest, caller: Caller
    ) -> leaderboard_pb2.ArchivedMatchResponse:
        request.player_id = self.callers.player(caller, request)  # only a match you played
        return await call(self.boards.ArchivedMatch(request, timeout=10))

    async def ExportMatch(
        self, request: gateway_pb2.ExportMatchRequest, caller: Caller
    ) -> gateway_pb2.ExportMatchResponse:
        player = self.callers.player(caller, request)
        if request.format not in ("mat", "json"):
            raise InvalidArgument("BAD_FORMAT", "format is mat or json", field="format")
        wanted = leaderboard_pb2.ArchivedMatchRequest(match_id=request.match_id, player_id=player)
        archived = await call(self.boards.ArchivedMatch(wanted, timeout=10))
        names = await self.names.lookup(list(archived.summary.player_ids))
        return match_export.export(archived, names, request.format)

    # -- the player's own --------------------------------------------------------------------

    async def GetBalance(
        self, request: gateway_pb2.BalanceRequest, caller: Caller
    ) -> gateway_pb2.BalanceResponse:
        player = self.callers.player(caller, request)
        reply = await call(
            self.wallet.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player), timeout=10)
        )
        return gateway_pb2.BalanceResponse(balance=reply.balance)

    async def GetNames(
        self, request: gateway_pb2.NamesRequest, caller: Caller
    ) -> gateway_pb2.NamesResponse:
        self.callers.player(caller, request)
        return gateway_pb2.NamesResponse(names=await self.names.lookup(list(request.player_ids)))

    async def GetHint(
        self, request: gateway_pb2.HintRequest, caller: Caller
    ) -> gateway_pb2.HintResponse:
        player = self.callers.player(caller, request)
        hints.plays_asked(request.limit)  # a bad limit is refused before any work
        view = await self._own_view(player, request.table_id)
        return await self.hints.for_view(view, request.limit)

    async def GetAnalysis(
        self, request: analysis_pb2.GetAnalysisRequest, caller: Caller
    ) -> analysis_pb2.MatchAnalysis:
        player = self.callers.player(caller, request)
        wanted = analysis_pb2.GetAnalysisRequest(match_id=request.match_id)
        # One answer for a match unknown (or not queued yet) and for someone else's private
        # one, as GetArchivedMatch: a match id cannot be probed.
        unknown = NotFound("UNKNOWN_MATCH", "no analysis of a match you may see (yet)")
        try:
            found = await call(self.analyses.GetAnalysis(wanted, timeout=10))
        except ServiceError as err:  # a remote error comes back as a ServiceError by status
            if err.status == grpc.StatusCode.NOT_FOUND:
                raise unknown from None
            raise
        if player not in found.player_ids:
            try:  # a spectator: only of a table still open to them (I-35)
                await self.streams.may_watch(found.table_id, player)
            except ServiceError as err:
                if err.status in REFUSED:
                    raise unknown from None
                raise
        for decision in found.decisions:  # fair-play evidence (issue 61) is for operators only
            decision.think_ms = 0
        return found

    async def SendChat(
        self, request: gateway_pb2.SendChatRequest, caller: Caller
    ) -> gateway_pb2.ChatMessage:
        return await self.social.send_chat(self.callers.player(caller, request), request)

    async def GetChat(
        self, request: gateway_pb2.GetChatRequest, caller: Caller
    ) -> gateway_pb2.ChatHistory:
        return await self.social.chat_history(self.callers.player(caller, request), request)

    async def MuteChat(
        self, request: gateway_pb2.MuteChatRequest, caller: Caller
    ) -> gateway_pb2.MuteChatResponse:
        return await self.social.mute(self.callers.player(caller, request), request)

    async def ReportChat(
        self, request: gateway_pb2.ReportChatRequest, caller: Caller
    ) -> gateway_pb2.ReportChatResponse:
        return await self.social.report(self.callers.player(caller, request), request)

    # -- friends -----------------------------------------------------------------------------

    async def Follow(
        self, request: gateway_pb2.FollowRequest, caller: Caller
    ) -> gateway_pb2.FriendsView:
        return await self.friends.follow(self.callers.player(caller, request), request)

    async def Block(
        self, request: gateway_pb2.BlockRequest, caller: Caller
    ) -> gateway_pb2.FriendsView:
        return await self.friends.block(self.callers.player(caller, request), request)

    async def GetFriends(
        self, request: gateway_pb2.GetFriendsRequest, caller: Caller
    ) -> gateway_pb2.FriendsView:
        return await self.social.view(self.callers.player(caller, request))

    async def Challenge(
        self, request: gateway_pb2.ChallengeRequest, caller: Caller
    ) -> gateway_pb2.ChallengeAnswer:
        return await self.friends.challenge(self.callers.player(caller, request), request)

    async def AnswerChallenge(
        self, request: gateway_pb2.AnswerChallengeRequest, caller: Caller
    ) -> gateway_pb2.ChallengeAnswer:
        return await self.friends.answer(self.callers.player(caller, request), request)

    async def SetPrivacy(
        self, request: gateway_pb2.PrivacyRequest, caller: Caller
    ) -> gateway_pb2.PrivacyResponse:
        player = self.callers.player(caller, request)
        await self.privacy.set(player, request.hide_from_spectators)
        return gateway_pb2.PrivacyResponse()

    async def SetPreferences(
        self, request: gateway_pb2.PreferencesRequest, caller: Caller
    ) -> gateway_pb2.PreferencesResponse:
        player = self.callers.player(caller, request)
        prefs = table_pb2.SetPreferencesRequest(player_id=player, auto_roll=request.auto_roll)
        await self.tables.preferences(prefs)
        return gateway_pb2.PreferencesResponse()

    # -- streams -----------------------------------------------------------------------------

    async def Play(
        self,
        requests: AsyncIterator[gateway_pb2.PlayRequest],
        caller: Caller,
        write: Callable[[gateway_pb2.PlayUpdate], Awaitable[None]],
    ) -> None:
        with self.metrics.stream_open("play", caller.transport):
            await self.streams.play(requests, caller, write)

    async def Watch(
        self,
        request: gateway_pb2.WatchRequest,
        caller: Caller,
        write: Callable[[gateway_pb2.PlayUpdate], Awaitable[None]],
    ) -> None:
        with self.metrics.stream_open("watch", caller.transport):
            await self.streams.watch(request, caller, write)

    async def Friends(
        self,
        request: gateway_pb2.GetFriendsRequest,
        caller: Caller,
        write: Callable[[gateway_pb2.FriendsView], Awaitable[None]],
    ) -> None:
        player = self.callers.player(caller, request)
        with self.metrics.stream_open("friends", caller.transport):
            await self.friends.stream(player, write, lambda: self.callers.refuse_banned(player))


def _retry_safe(
    request: matchmaking_pb2.CreateTableRequest
    | matchmaking_pb2.JoinByCodeRequest
    | matchmaking_pb2.QuickMatchRequest,
) -> None:
    """A request id for a call the client sent without one: the channel retries a call that
    failed UNAVAILABLE on another matchmaking replica, and with the id the retry answers the
    first call's table instead of opening or joining a second one."""
    if not request.request_id:
        request.request_id = f"gw-{uuid.uuid4().hex}"
