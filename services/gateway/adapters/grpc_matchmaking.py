"""The gateway's LobbyPort on the matchmaking service (bg.matchmaking.v1)."""

from __future__ import annotations

from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from services.common.errors import remote_call

TIMEOUT_S = 10.0


class GrpcLobby:
    def __init__(self, stub: matchmaking_pb2_grpc.MatchmakingServiceAsyncStub) -> None:
        self.stub = stub

    async def create_table(
        self, request: matchmaking_pb2.CreateTableRequest
    ) -> matchmaking_pb2.LobbyTable:
        return await remote_call(self.stub.CreateTable(request, timeout=TIMEOUT_S))

    async def list_tables(
        self, request: matchmaking_pb2.ListTablesRequest
    ) -> matchmaking_pb2.ListTablesResponse:
        return await remote_call(self.stub.ListTables(request, timeout=TIMEOUT_S))

    async def join_by_code(
        self, request: matchmaking_pb2.JoinByCodeRequest
    ) -> matchmaking_pb2.LobbyTable:
        return await remote_call(self.stub.JoinByCode(request, timeout=TIMEOUT_S))

    async def quick_match(
        self, request: matchmaking_pb2.QuickMatchRequest
    ) -> matchmaking_pb2.LobbyTable:
        return await remote_call(self.stub.QuickMatch(request, timeout=TIMEOUT_S))

    async def start_table(
        self, request: matchmaking_pb2.TableRequest
    ) -> matchmaking_pb2.LobbyTable:
        return await remote_call(self.stub.StartTable(request, timeout=TIMEOUT_S))

    async def leave_table(
        self, request: matchmaking_pb2.TableRequest
    ) -> matchmaking_pb2.LobbyTable:
        return await remote_call(self.stub.LeaveTable(request, timeout=TIMEOUT_S))

    async def get_table(self, request: matchmaking_pb2.TableRequest) -> matchmaking_pb2.LobbyTable:
        return await remote_call(self.stub.GetTable(request, timeout=TIMEOUT_S))

    async def rematch(self, request: matchmaking_pb2.TableRequest) -> matchmaking_pb2.LobbyTable:
        return await remote_call(self.stub.Rematch(request, timeout=TIMEOUT_S))

    async def list_tournaments(
        self, request: matchmaking_pb2.ListTournamentsRequest
    ) -> matchmaking_pb2.ListTournamentsResponse:
        return await remote_call(self.stub.ListTournaments(request, timeout=TIMEOUT_S))

    async def get_tournament(
        self, request: matchmaking_pb2.TournamentRequest
    ) -> matchmaking_pb2.Tournament:
        return await remote_call(self.stub.GetTournament(request, timeout=TIMEOUT_S))

    async def register_tournament(
        self, request: matchmaking_pb2.TournamentRequest
    ) -> matchmaking_pb2.Tournament:
        return await remote_call(self.stub.RegisterTournament(request, timeout=TIMEOUT_S))

    async def unregister_tournament(
        self, request: matchmaking_pb2.TournamentRequest
    ) -> matchmaking_pb2.Tournament:
        return await remote_call(self.stub.UnregisterTournament(request, timeout=TIMEOUT_S))
