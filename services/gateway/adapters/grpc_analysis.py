"""The gateway's AnalysesPort on the analysis service (bg.analysis.v1): a hint comes back in the
analysis's own messages (gateway.proto imports analysis.proto) and leaves in the gateway's."""

from __future__ import annotations

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from bg.gateway.v1 import gateway_pb2
from bg.table.v1 import table_pb2
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

    async def hint(self, view: table_pb2.TableView, limit: int) -> gateway_pb2.HintResponse:
        asked = analysis_pb2.HintCall(view=view, limit=limit)
        answer = await remote_call(self.stub.Hint(asked, timeout=TIMEOUT_S))
        out = gateway_pb2.HintResponse(seq=answer.seq)
        for hinted in answer.plays:
            play = out.plays.add(
                notation=hinted.notation,
                equity=hinted.equity,
                probabilities=hinted.probabilities,
            )
            for step in hinted.steps:
                play.steps.add(**{"from": getattr(step, "from"), "to": step.to})
        return out
