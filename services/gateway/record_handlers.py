"""The records' handlers: the boards and profiles, finished matches (history, changes, the
archive, exports) and their analyses, each as this player may see it."""

from __future__ import annotations

from typing import TypeVar

import grpc

from bg.analysis.v1 import analysis_pb2
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from services.common.errors import InvalidArgument, NotFound, ServiceError
from services.gateway import match_export
from services.gateway.callers import Caller, Callers
from services.gateway.names import DisplayNames
from services.gateway.play_streams import PlayStreams
from services.gateway.ports import AnalysesPort, BoardsPort

# The boards' reads of any player's figures (the caller's own by default).
Anyones = TypeVar(
    "Anyones",
    leaderboard_pb2.RankRequest,
    leaderboard_pb2.ProfileRequest,
    leaderboard_pb2.HistoryRequest,
)
# What a spectator's check answers for a table they may not see (or one the lobby forgot).
REFUSED = (
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
)


class RecordHandlers:
    UNARY = (
        "GetLeaderboard",
        "GetRank",
        "GetProfile",
        "GetMatchHistory",
        "GetMatchChanges",
        "GetErrorTrend",
        "GetArchivedMatch",
        "ExportMatch",
        "GetAnalysis",
    )

    def __init__(
        self,
        callers: Callers,
        boards: BoardsPort,
        analyses: AnalysesPort,
        names: DisplayNames,
        streams: PlayStreams,
    ) -> None:
        self.callers = callers
        self.boards = boards
        self.analyses = analyses
        self.names = names
        self.streams = streams  # who may watch a table: who may see its analysis

    def _anyones(self, request: Anyones, caller: Caller) -> Anyones:
        """A read of any player's figures: the caller's own when the request names nobody (the
        caller is checked, and counted against their limits, either way)."""
        player = self.callers.player(caller, request)
        request.player_id = request.player_id or player
        return request

    async def GetLeaderboard(
        self, request: leaderboard_pb2.TopRequest, caller: Caller
    ) -> leaderboard_pb2.TopResponse:
        self.callers.player(caller, request)
        return await self.boards.top(request)

    async def GetRank(
        self, request: leaderboard_pb2.RankRequest, caller: Caller
    ) -> leaderboard_pb2.RankResponse:
        return await self.boards.rank(self._anyones(request, caller))

    async def GetProfile(
        self, request: leaderboard_pb2.ProfileRequest, caller: Caller
    ) -> leaderboard_pb2.ProfileResponse:
        return await self.boards.profile(self._anyones(request, caller))

    async def GetMatchHistory(
        self, request: leaderboard_pb2.HistoryRequest, caller: Caller
    ) -> leaderboard_pb2.HistoryResponse:
        return await self.boards.history(self._anyones(request, caller))  # a profile's matches

    async def GetMatchChanges(
        self, request: leaderboard_pb2.ChangesRequest, caller: Caller
    ) -> leaderboard_pb2.ChangesResponse:
        request.player_id = self.callers.player(caller, request)  # your own changes only
        return await self.boards.changes(request)

    async def GetErrorTrend(
        self, request: analysis_pb2.PlayerTrendRequest, caller: Caller
    ) -> analysis_pb2.PlayerTrendResponse:
        request.player_id = self.callers.player(caller, request)  # your own course only
        return await self.analyses.player_trend(request)

    async def GetArchivedMatch(
        self, request: leaderboard_pb2.ArchivedMatchRequest, caller: Caller
    ) -> leaderboard_pb2.ArchivedMatchResponse:
        request.player_id = self.callers.player(caller, request)  # only a match you played
        return await self.boards.archived_match(request)

    async def ExportMatch(
        self, request: gateway_pb2.ExportMatchRequest, caller: Caller
    ) -> gateway_pb2.ExportMatchResponse:
        player = self.callers.player(caller, request)
        if request.format not in ("mat", "json"):
            raise InvalidArgument("BAD_FORMAT", "format is mat or json", field="format")
        wanted = leaderboard_pb2.ArchivedMatchRequest(match_id=request.match_id, player_id=player)
        archived = await self.boards.archived_match(wanted)
        names = await self.names.lookup(list(archived.summary.player_ids))
        return match_export.export(archived, names, request.format)

    async def GetAnalysis(
        self, request: analysis_pb2.GetAnalysisRequest, caller: Caller
    ) -> analysis_pb2.MatchAnalysis:
        player = self.callers.player(caller, request)
        wanted = analysis_pb2.GetAnalysisRequest(match_id=request.match_id)
        # One answer for a match unknown (or not queued yet) and for someone else's private
        # one, as GetArchivedMatch: a match id cannot be probed.
        unknown = NotFound("UNKNOWN_MATCH", "no analysis of a match you may see (yet)")
        try:
            found = await self.analyses.analysis(wanted)
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
