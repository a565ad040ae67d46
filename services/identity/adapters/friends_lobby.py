"""Friends' lobby port (services/identity/ports.py FriendsLobby) on the matchmaking service,
its tables as spectators may know them (services/identity/seating.py)."""

from __future__ import annotations

import grpc

from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from bg.table.v1 import table_pb2
from services.common.errors import ServiceError, remote_call
from services.identity.seating import Seatings


class MatchmakingFriendsLobby:
    def __init__(
        self, lobby: matchmaking_pb2_grpc.MatchmakingServiceAsyncStub, shown: Seatings
    ) -> None:
        self.lobby = lobby
        self.shown = shown

    async def create(
        self, player_id: str, options: table_pb2.TableOptions, request_id: str
    ) -> matchmaking_pb2.LobbyTable:
        request = matchmaking_pb2.CreateTableRequest(
            player_id=player_id, options=options, public=False, request_id=request_id
        )
        table = await remote_call(self.lobby.CreateTable(request, timeout=10))
        return await self.shown.shown(table)

    async def join(self, player_id: str, code: str, request_id: str) -> matchmaking_pb2.LobbyTable:
        request = matchmaking_pb2.JoinByCodeRequest(
            player_id=player_id, code=code, request_id=request_id
        )
        table = await remote_call(self.lobby.JoinByCode(request, timeout=10))
        return await self.shown.shown(table)

    async def leave(self, player_id: str, table_id: str) -> None:
        request = matchmaking_pb2.TableRequest(player_id=player_id, table_id=table_id)
        await remote_call(self.lobby.LeaveTable(request, timeout=10))

    async def seated(self, player_id: str) -> list[matchmaking_pb2.LobbyTable]:
        request = matchmaking_pb2.ListTablesRequest(player_id=player_id, mine=True)
        found = await remote_call(self.lobby.ListTables(request, timeout=10))
        return [await self.shown.shown(t) for t in found.tables]

    async def in_play(self, table_id: str) -> bool:
        return await self.shown.in_play(table_id)

    async def table(self, table_id: str) -> matchmaking_pb2.LobbyTable | None:
        request = matchmaking_pb2.TableRequest(table_id=table_id)
        try:
            found = await remote_call(self.lobby.GetTable(request, timeout=10))
        except ServiceError as err:
            if err.status == grpc.StatusCode.NOT_FOUND:
                return None
            raise
        return await self.shown.shown(found)
