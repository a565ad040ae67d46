"""The gateway's BoardsPort on the leaderboard service (bg.leaderboard.v1)."""

from __future__ import annotations

from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from services.common.errors import remote_call

TIMEOUT_S = 10.0


class GrpcBoards:
    def __init__(self, stub: leaderboard_pb2_grpc.LeaderboardServiceAsyncStub) -> None:
        self.stub = stub

    async def top(self, request: leaderboard_pb2.TopRequest) -> leaderboard_pb2.TopResponse:
        return await remote_call(self.stub.Top(request, timeout=TIMEOUT_S))

    async def rank(self, request: leaderboard_pb2.RankRequest) -> leaderboard_pb2.RankResponse:
        return await remote_call(self.stub.Rank(request, timeout=TIMEOUT_S))

    async def profile(
        self, request: leaderboard_pb2.ProfileRequest
    ) -> leaderboard_pb2.ProfileResponse:
        return await remote_call(self.stub.Profile(request, timeout=TIMEOUT_S))

    async def history(
        self, request: leaderboard_pb2.HistoryRequest
    ) -> leaderboard_pb2.HistoryResponse:
        return await remote_call(self.stub.History(request, timeout=TIMEOUT_S))

    async def changes(
        self, request: leaderboard_pb2.ChangesRequest
    ) -> leaderboard_pb2.ChangesResponse:
        return await remote_call(self.stub.Changes(request, timeout=TIMEOUT_S))

    async def archived_match(
        self, request: leaderboard_pb2.ArchivedMatchRequest
    ) -> leaderboard_pb2.ArchivedMatchResponse:
        return await remote_call(self.stub.ArchivedMatch(request, timeout=TIMEOUT_S))
