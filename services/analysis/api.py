"""The analysis service's gRPC API: a match's analysis (or where it stands in the queue) and a
player's error rate over their recent matches. Access is the gateway's to decide (the match's
players, spectators of a public table); this serves the cluster's own callers."""

from __future__ import annotations

import bisect
import time
from typing import Any

import grpc

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from evaluator.analysis import band
from services.analysis import fair_play
from services.analysis.hints import Hints
from services.analysis.judge import facts_of, with_luck
from services.analysis.ports import AnalysisRepository, FairPlayRepository
from services.analysis.schema import BANNED, CLEARED, OPEN, QUEUED, RESTRICTED
from services.analysis.worker import off_loop
from services.common.errors import InvalidArgument, NotFound, grpc_errors

Context = grpc.aio.ServicerContext[Any, Any]
POPULATION_MIN_DECISIONS = 20  # a player's record counts among the population from here
FLAG_STATES = (OPEN, CLEARED, RESTRICTED, BANNED, "all")


class AnalysisServicer(analysis_pb2_grpc.AnalysisServiceServicer):
    def __init__(
        self,
        store: AnalysisRepository,
        fair_play: FairPlayRepository,
        population_kept_s: float = 300.0,
        threshold: float = fair_play.THRESHOLD,
    ) -> None:
        self.store = store
        self.fair_play = fair_play
        self.threshold = threshold  # BG_FAIR_PLAY_THRESHOLD
        self.population_kept_s = population_kept_s  # BG_ANALYSIS_POPULATION_S
        self._population: tuple[float, list[float]] | None = None  # (read at, rates)
        self.hints = Hints()

    async def _rates(self) -> list[float]:
        """The population's error rates, lowest first: a profile read must not scan every
        player's record, so the picture is kept BG_ANALYSIS_POPULATION_S."""
        now = time.monotonic()
        if self._population is None or now - self._population[0] >= self.population_kept_s:
            self._population = (now, await self.store.population(POPULATION_MIN_DECISIONS))
        return self._population[1]

    @grpc_errors
    async def GetAnalysis(
        self, request: analysis_pb2.GetAnalysisRequest, context: Context
    ) -> analysis_pb2.MatchAnalysis:
        if not request.match_id:
            raise InvalidArgument("MISSING", "match_id is required", field="match_id")
        if len(request.match_id) > 200:
            raise InvalidArgument(
                "TOO_LONG", "match_id is at most 200 characters", field="match_id"
            )
        stored = await self.store.get(request.match_id)
        if stored is None:
            raise NotFound("UNKNOWN_MATCH", "no analysis of this match (none was queued)")
        if stored.state == QUEUED or stored.result is None:
            return analysis_pb2.MatchAnalysis(
                match_id=stored.match_id,
                table_id=stored.table_id,
                player_ids=facts_of(stored.event or b"").player_ids,
                state=analysis_pb2.ANALYSIS_STATE_QUEUED,
                ended_ms=stored.ended_ms,
                ahead=await self.store.ahead_of(stored.queued_ms, stored.match_id),
            )
        found = analysis_pb2.MatchAnalysis()
        found.ParseFromString(stored.result)
        if found.luck_pending:  # first read: the rolls' luck now, kept for the next reader
            found = await off_loop(with_luck, stored.result)
            await self.store.add_luck(found)
        found.table_id = found.table_id or stored.table_id
        found.analysed_ms = stored.analysed_ms  # the store's, set as the analysis was kept
        return found

    @grpc_errors
    async def PlayerTrend(
        self, request: analysis_pb2.PlayerTrendRequest, context: Context
    ) -> analysis_pb2.PlayerTrendResponse:
        limit = _player_limit(request)
        rows = await self.store.trend(request.player_id, limit)
        decisions = sum(r.decisions for r in rows)
        lost = sum(r.error_rate * r.decisions for r in rows)  # thousandths
        rate = lost / decisions if decisions else 0.0
        rates = await self._rates() if decisions else []
        # Higher by more than rounding: the same record summed in another order is not worse.
        worse = len(rates) - bisect.bisect_right(rates, rate + 1e-9)
        return analysis_pb2.PlayerTrendResponse(
            matches=rows,
            error_rate=rate,
            decisions=decisions,
            band=band(rate) if decisions else "",
            better_than=worse / len(rates) if rates else 0.0,
            compared=len(rates),
        )

    @grpc_errors
    async def ListFlags(
        self, request: analysis_pb2.ListFlagsRequest, context: Context
    ) -> analysis_pb2.ListFlagsResponse:
        state = request.state or OPEN
        if state not in FLAG_STATES:
            raise InvalidArgument(
                "INVALID_STATE", f"state is one of {', '.join(FLAG_STATES)}", field="state"
            )
        limit = request.limit or 50
        if not 1 <= limit <= 200:
            raise InvalidArgument("INVALID_LIMIT", "limit is 1..200", field="limit")
        if len(request.player_id) > 100:
            raise InvalidArgument("INVALID_ID", "player_id is 0..100 characters", field="player_id")
        flags = await self.fair_play.flags(state, limit, request.player_id, request.flag_id)
        return analysis_pb2.ListFlagsResponse(flags=flags, threshold=self.threshold)

    @grpc_errors
    async def PlayerEvidence(
        self, request: analysis_pb2.PlayerTrendRequest, context: Context
    ) -> analysis_pb2.PlayerEvidenceResponse:
        return await self.fair_play.evidence(request.player_id, _player_limit(request))

    @grpc_errors
    async def DecideFlag(
        self, request: analysis_pb2.RecordDecisionRequest, context: Context
    ) -> analysis_pb2.FairPlayFlag:
        if request.decision not in fair_play.DECISIONS:
            raise InvalidArgument(
                "INVALID_DECISION", "decision is clear, restrict or ban", field="decision"
            )
        if request.flag_id <= 0:
            raise InvalidArgument("INVALID_FLAG", "flag_id is a flag's id", field="flag_id")
        if not request.operator or not request.reason:
            raise InvalidArgument("MISSING", "a decision needs its operator and reason")
        return await self.fair_play.decide(
            request.flag_id,
            request.decision,
            request.operator[:64],
            request.reason[:200],
            int(time.time() * 1000),
        )

    @grpc_errors
    async def Hint(
        self, request: analysis_pb2.HintCall, context: Context
    ) -> analysis_pb2.HintAnswer:
        return await self.hints.for_view(request.view, request.limit)


def _player_limit(request: analysis_pb2.PlayerTrendRequest) -> int:
    """A player's listing checked: the id 1..100 characters; the limit 1..200 (0: 50)."""
    if not request.player_id or len(request.player_id) > 100:
        raise InvalidArgument("INVALID_ID", "player_id is 1..100 characters", field="player_id")
    limit = request.limit or 50
    if not 1 <= limit <= 200:
        raise InvalidArgument("INVALID_LIMIT", "limit is 1..200", field="limit")
    return limit
