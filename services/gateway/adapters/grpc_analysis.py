"""The gateway's AnalysesPort on the analysis service (bg.analysis.v1)."""

from __future__ import annotations

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from services.common.errors import remote_call

TIMEOUT_S = 10.0


class GrpcAnalyses:
    def __init__(self, stub: analysis_pb2_grpc.AnalysisServiceAsyncStub) -> None:
        self.stub = stub

    async def analysis(
        self, request: analysis_pb2.GetAnalysisRequest
    ) -> analysis_pb2.MatchAnalysis:
        return await remote_call(self.stub.GetAnalysis(request, timeout=TIMEOUT_S))

    async def player_trend(
        self, request: analysis_pb2.PlayerTrendRequest
    ) -> analysis_pb2.PlayerTrendResponse:
        return await remote_call(self.stub.PlayerTrend(request, timeout=TIMEOUT_S))
