"""The lobby's handlers: tables, party codes, quick match and tournaments, on the matchmaking
service, each table shown as this player may see it (services/gateway/lobby_views.py)."""

from __future__ import annotations

import uuid

from bg.matchmaking.v1 import matchmaking_pb2
from services.gateway.callers import Caller, Callers
from services.gateway.lobby_views import LobbyViews
from services.gateway.ports import LobbyPort


class LobbyHandlers:
    UNARY = (
        "CreateTable",
        "ListTables",
        "JoinByCode",
        "QuickMatch",
        "StartTable",
        "LeaveTable",
        "GetTable",
        "ListTournaments",
        "GetTournament",
        "RegisterTournament",
        "UnregisterTournament",
    )

    def __init__(self, callers: Callers, lobby: LobbyPort, shown: LobbyViews) -> None:
        self.callers = callers
        self.lobby = lobby
        self.shown = shown

    async def CreateTable(
        self, request: matchmaking_pb2.CreateTableRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        _retry_safe(request)
        return await self.shown.shown(await self.lobby.create_table(request))

    async def ListTables(
        self, request: matchmaking_pb2.ListTablesRequest, caller: Caller
    ) -> matchmaking_pb2.ListTablesResponse:
        request.player_id = self.callers.player(caller, request)
        reply = await self.lobby.list_tables(request)
        return await self.shown.listed(reply, request)

    async def JoinByCode(
        self, request: matchmaking_pb2.JoinByCodeRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        _retry_safe(request)
        return await self.shown.shown(await self.lobby.join_by_code(request))

    async def QuickMatch(
        self, request: matchmaking_pb2.QuickMatchRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        _retry_safe(request)
        return await self.shown.shown(await self.lobby.quick_match(request))

    async def StartTable(
        self, request: matchmaking_pb2.TableRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        return await self.shown.shown(await self.lobby.start_table(request))

    async def LeaveTable(
        self, request: matchmaking_pb2.TableRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        return await self.shown.shown(await self.lobby.leave_table(request))

    async def GetTable(
        self, request: matchmaking_pb2.TableRequest, caller: Caller
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.callers.player(caller, request)
        return await self.shown.shown(await self.lobby.get_table(request))

    async def ListTournaments(
        self, request: matchmaking_pb2.ListTournamentsRequest, caller: Caller
    ) -> matchmaking_pb2.ListTournamentsResponse:
        self.callers.player(caller, request)
        return await self.lobby.list_tournaments(request)

    async def GetTournament(
        self, request: matchmaking_pb2.TournamentRequest, caller: Caller
    ) -> matchmaking_pb2.Tournament:
        request.player_id = self.callers.player(caller, request)
        return await self.lobby.get_tournament(request)

    async def RegisterTournament(
        self, request: matchmaking_pb2.TournamentRequest, caller: Caller
    ) -> matchmaking_pb2.Tournament:
        request.player_id = self.callers.player(caller, request)
        return await self.lobby.register_tournament(request)

    async def UnregisterTournament(
        self, request: matchmaking_pb2.TournamentRequest, caller: Caller
    ) -> matchmaking_pb2.Tournament:
        request.player_id = self.callers.player(caller, request)
        return await self.lobby.unregister_tournament(request)


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
