"""Who sits at a table and who may watch it, as chat and friends need to know (I-35, with the
players' opt-out: services/contracts/redis_keys.private_prefs_key, which the gateway writes
when a player sets it; read here, never written)."""

from __future__ import annotations

from typing import Any

import grpc

from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common.errors import ServiceError, remote_call
from services.contracts.redis_keys import private_prefs_key
from services.contracts.vocabulary import FINISHED
from services.identity.chat import Seating


async def any_hidden(redis: Any, player_ids: list[str]) -> bool:
    """Whether a player of these keeps their matches from spectators."""
    people = [p for p in player_ids if p]
    if not people:
        return False
    async with redis.pipeline(transaction=False) as pipe:
        for player_id in people:
            pipe.exists(private_prefs_key(player_id))
        return any(await pipe.execute())


class Seatings:
    def __init__(
        self,
        redis: Any,
        lobby: matchmaking_pb2_grpc.MatchmakingServiceAsyncStub,
        tables: table_pb2_grpc.TableServiceAsyncStub,
    ) -> None:
        self.redis = redis
        self.lobby = lobby
        self.tables = tables

    async def of(self, table_id: str, player: str, phase: bool = False) -> Seating:
        """Who sits at the table and whether anyone may watch it; with `phase`, whether its
        match is over (one view read). The lobby's NOT_FOUND for a table it does not know."""
        request = matchmaking_pb2.TableRequest(player_id=player, table_id=table_id)
        lobby = await remote_call(self.lobby.GetTable(request, timeout=10))
        hidden = await any_hidden(self.redis, list(lobby.player_ids))
        match_id, over = lobby.match_id, False
        if phase and lobby.match_id:
            asked = table_pb2.GetViewRequest(table_id=table_id, spectator=True)
            view = await remote_call(self.tables.GetView(asked, timeout=10))
            match_id, over = view.match_id, view.phase in FINISHED
        return Seating(tuple(lobby.player_ids), lobby.watchable and not hidden, match_id, over)

    async def in_play(self, table_id: str) -> bool:
        """Whether the table's match is still being played (one view read). A table the table
        service has forgotten is not; one it cannot answer for now keeps the lobby's word."""
        asked = table_pb2.GetViewRequest(table_id=table_id, spectator=True)
        try:
            view = await remote_call(self.tables.GetView(asked, timeout=10))
        except ServiceError as err:
            return err.status != grpc.StatusCode.NOT_FOUND
        return view.phase not in FINISHED

    async def shown(self, table: matchmaking_pb2.LobbyTable) -> matchmaking_pb2.LobbyTable:
        """The table as spectators may know it: not watchable when a player opts out."""
        if table.watchable and await any_hidden(self.redis, list(table.player_ids)):
            table.watchable = False
        return table
