"""Lobby tables as a client sees them: the lobby does not know players' privacy (the gateway
keeps it), so a table one of whose players hides from spectators is not watchable, as Watch
already treats it; the live list keeps only matches still in play with a player at the table
(one nobody is at is waiting for the away rules to end it, I-41, W-2: nothing to watch)."""

from __future__ import annotations

import asyncio

from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.errors import ServiceError
from services.contracts.vocabulary import FINISHED
from services.gateway.privacy import Privacy
from services.gateway.table_calls import TableCalls


class LobbyViews:
    def __init__(self, privacy: Privacy, tables: TableCalls) -> None:
        self.privacy = privacy
        self.tables = tables

    async def shown(self, table: matchmaking_pb2.LobbyTable) -> matchmaking_pb2.LobbyTable:
        if table.watchable and await self.privacy.any_hidden(list(table.player_ids)):
            table.watchable = False
        return table

    async def listed(
        self, reply: matchmaking_pb2.ListTablesResponse, asked: matchmaking_pb2.ListTablesRequest
    ) -> matchmaking_pb2.ListTablesResponse:
        for table in reply.tables:
            await self.shown(table)
        if asked.mine:  # the caller's seats: waiting, or a match still in play
            keep = [self._still_mine(t, asked.player_id) for t in reply.tables]
        elif asked.live:  # matches still in play (the lobby cannot tell), none kept private
            keep = [self._watchable(t) for t in reply.tables]
        else:
            return reply
        kept = await asyncio.gather(*keep)
        tables = [t for t, ok in zip(reply.tables, kept, strict=True) if ok]
        return matchmaking_pb2.ListTablesResponse(tables=tables)

    async def _still_mine(self, table: matchmaking_pb2.LobbyTable, player_id: str) -> bool:
        if table.status != "dealt":
            return True  # waiting for a player, or being dealt
        return await self._in_play(
            table_pb2.GetViewRequest(table_id=table.table_id, player_id=player_id)
        )

    async def _watchable(self, table: matchmaking_pb2.LobbyTable) -> bool:
        if await self.privacy.any_hidden(list(table.player_ids)):
            return False
        request = table_pb2.GetViewRequest(table_id=table.table_id, spectator=True)
        return await self._in_play(request, somebody_here=True)

    async def _in_play(
        self, request: table_pb2.GetViewRequest, somebody_here: bool = False
    ) -> bool:
        try:
            view = await self.tables.view(request, timeout=5)
        except ServiceError:
            return False  # gone (forgotten an hour after its end) or unreachable: not listed
        return view.phase not in FINISHED and not (somebody_here and all(view.away))
