"""The table's handlers: a seat's Play stream and a spectator's Watch, the seat's own view and
match record, hints where the rules allow them, the seat's preferences."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from bg.gateway.v1 import gateway_pb2
from bg.table.v1 import table_pb2
from services.common.errors import PermissionDenied
from services.contracts.bounds import hint_plays
from services.gateway.callers import Caller, Callers
from services.gateway.metrics import GatewayMetrics
from services.gateway.play_streams import PlayStreams
from services.gateway.ports import AnalysesPort
from services.gateway.table_calls import TableCalls


class PlayHandlers:
    UNARY = ("GetView", "GetMatchRecord", "GetHint", "SetPreferences")

    def __init__(
        self,
        callers: Callers,
        streams: PlayStreams,
        tables: TableCalls,
        analyses: AnalysesPort,
        metrics: GatewayMetrics,
    ) -> None:
        self.callers = callers
        self.streams = streams
        self.tables = tables  # a table's calls go to its owner first
        self.metrics = metrics
        self.analyses = analyses  # hints: the evaluator is the analysis service's

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

    async def GetHint(
        self, request: gateway_pb2.HintRequest, caller: Caller
    ) -> gateway_pb2.HintResponse:
        player = self.callers.player(caller, request)
        hint_plays(request.limit)  # a bad limit is refused before any work
        view = await self._own_view(player, request.table_id)
        return await self.analyses.hint(view, request.limit)

    async def SetPreferences(
        self, request: gateway_pb2.PreferencesRequest, caller: Caller
    ) -> gateway_pb2.PreferencesResponse:
        player = self.callers.player(caller, request)
        prefs = table_pb2.SetPreferencesRequest(player_id=player, auto_roll=request.auto_roll)
        await self.tables.preferences(prefs)
        return gateway_pb2.PreferencesResponse()

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
