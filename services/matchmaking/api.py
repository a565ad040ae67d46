"""The gRPC servicer of bg.matchmaking.v1.MatchmakingService."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable
from typing import Any

import grpc

from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from services.common.errors import (
    InvalidArgument,
    ServiceError,
    grpc_errors,
    infrastructure_failure,
)
from services.matchmaking.lobby import Lobby
from services.matchmaking.request_ids import Retry
from services.matchmaking.table_documents import LobbyStatus, Table
from services.matchmaking.tournaments import Tournaments
from services.matchmaking.tournaments import to_proto as tournament_proto

log = logging.getLogger("bg.matchmaking")


def _ended_alone(task: asyncio.Task[Table]) -> None:
    """A lobby change whose caller went away (its deadline passed while the wallet timed out
    mid-deal, say) ends here: its failure is said once by its code, not left to the loop as an
    unretrieved task's traceback. The caller's retry, by its request id, runs it again."""
    if task.cancelled() or (failure := task.exception()) is None:
        return
    err = failure if isinstance(failure, ServiceError) else infrastructure_failure(failure)
    if err is None:
        log.error("lobby change failed after its caller left", exc_info=failure)
    else:
        extra = {"code": err.code, "status": err.status.name}
        log.warning("lobby change failed after its caller left", extra=extra)


Context = grpc.aio.ServicerContext[Any, Any]


def to_proto(t: Table, invite_base: str) -> matchmaking_pb2.LobbyTable:
    return matchmaking_pb2.LobbyTable(
        table_id=t.table_id,
        code=t.code,
        invite_link=invite_base + t.code,
        host_id=t.host_id,
        options=t.proto_options(),
        public=t.public,
        player_ids=t.player_ids,
        status=t.status,
        match_id=t.match_id,
        fingerprint=t.fingerprint,
        close_reason=t.close_reason,
        code_expires_ms=t.code_expires_ms,
        watchable=t.watchable,
        tournament_id=t.tournament_id,
    )


def _retry(
    request: matchmaking_pb2.CreateTableRequest
    | matchmaking_pb2.JoinByCodeRequest
    | matchmaking_pb2.QuickMatchRequest,
) -> Retry | None:
    """The request's client id, with a fingerprint of the rest of it (another request under a
    used id is refused)."""
    if not request.request_id:
        return None
    if len(request.request_id) > 64:
        raise InvalidArgument("TOO_LONG", "request_id is at most 64 characters", field="request_id")
    request_id = request.request_id
    request.request_id = ""  # the fingerprint is of the rest
    try:
        digest = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()[:16]
    finally:
        request.request_id = request_id
    return Retry(request.player_id, request_id, digest)


class MatchmakingServicer(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, lobby: Lobby, invite_base: str, tournaments: Tournaments) -> None:
        self.lobby = lobby
        self.invite_base = invite_base
        self.tournaments = tournaments
        self._running: set[asyncio.Task[Table]] = set()

    # -- tournaments -------------------------------------------------------------------------

    @grpc_errors
    async def CreateTournament(
        self, request: matchmaking_pb2.CreateTournamentRequest, context: Context
    ) -> matchmaking_pb2.Tournament:
        return tournament_proto(await self.tournaments.create(request))

    @grpc_errors
    async def ListTournaments(
        self, request: matchmaking_pb2.ListTournamentsRequest, context: Context
    ) -> matchmaking_pb2.ListTournamentsResponse:
        limit = request.limit or 50
        if not 1 <= limit <= 200:
            raise InvalidArgument("INVALID_LIMIT", "limit is 1..200", field="limit")
        found = await self.tournaments.newest(request.status, limit)
        return matchmaking_pb2.ListTournamentsResponse(
            tournaments=[tournament_proto(t) for t in found]
        )

    @grpc_errors
    async def GetTournament(
        self, request: matchmaking_pb2.TournamentRequest, context: Context
    ) -> matchmaking_pb2.Tournament:
        return tournament_proto(await self.tournaments.get(request.tournament_id))

    @grpc_errors
    async def RegisterTournament(
        self, request: matchmaking_pb2.TournamentRequest, context: Context
    ) -> matchmaking_pb2.Tournament:
        found = await self.tournaments.register(request.player_id, request.tournament_id)
        return tournament_proto(found)

    @grpc_errors
    async def UnregisterTournament(
        self, request: matchmaking_pb2.TournamentRequest, context: Context
    ) -> matchmaking_pb2.Tournament:
        found = await self.tournaments.unregister(request.player_id, request.tournament_id)
        return tournament_proto(found)

    @grpc_errors
    async def CancelTournament(
        self, request: matchmaking_pb2.CancelTournamentRequest, context: Context
    ) -> matchmaking_pb2.Tournament:
        found = await self.tournaments.cancel(request.tournament_id, request.reason)
        return tournament_proto(found)

    async def _to_the_end(self, change: Awaitable[Table]) -> Table:
        """Run a lobby change to its end even if the caller goes away (its deadline, a dropped
        connection): cut in the middle, a quick match could leave a table made but never
        queued. The caller's retry, by its request id, finds the finished work."""
        task = asyncio.ensure_future(change)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        try:
            return await asyncio.shield(task)  # its failure: the caller's typed refusal
        except asyncio.CancelledError:
            task.add_done_callback(_ended_alone)
            raise

    def _out(self, t: Table) -> matchmaking_pb2.LobbyTable:
        return to_proto(t, self.invite_base)

    @grpc_errors
    async def CreateTable(
        self, request: matchmaking_pb2.CreateTableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        retry = _retry(request)
        return self._out(
            await self._to_the_end(
                self.lobby.once(
                    retry,
                    lambda: self.lobby.create(
                        request.player_id, request.options, request.public, retry=retry
                    ),
                )
            )
        )

    @grpc_errors
    async def ListTables(
        self, request: matchmaking_pb2.ListTablesRequest, context: Context
    ) -> matchmaking_pb2.ListTablesResponse:
        if request.mine:
            tables = await self.lobby.player_tables(request.player_id)
        elif request.live:
            tables = await self.lobby.list_live(request.profile, request.limit)
        else:
            tables = await self.lobby.list_open(
                request.profile,
                request.match_length,
                request.min_bet,
                request.max_bet,
                request.limit,
            )
        return matchmaking_pb2.ListTablesResponse(tables=[self._out(t) for t in tables])

    @grpc_errors
    async def JoinByCode(
        self, request: matchmaking_pb2.JoinByCodeRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        retry = _retry(request)
        return self._out(
            await self._to_the_end(
                self.lobby.once(
                    retry, lambda: self.lobby.join_by_code(request.player_id, request.code, retry)
                )
            )
        )

    @grpc_errors
    async def QuickMatch(
        self, request: matchmaking_pb2.QuickMatchRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        retry = _retry(request)
        return self._out(
            await self._to_the_end(
                self.lobby.once(
                    retry,
                    lambda: self.lobby.quick_match(request.player_id, request.options, retry),
                )
            )
        )

    @grpc_errors
    async def StartTable(
        self, request: matchmaking_pb2.TableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        return self._out(
            await self._to_the_end(self.lobby.start(request.player_id, request.table_id))
        )

    @grpc_errors
    async def LeaveTable(
        self, request: matchmaking_pb2.TableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        return self._out(
            await self._to_the_end(self.lobby.leave(request.player_id, request.table_id))
        )

    @grpc_errors
    async def GetTable(
        self, request: matchmaking_pb2.TableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        table = await self.lobby.get(request.table_id)
        if table.status is LobbyStatus.DEALING:
            table = await self.lobby.deal(table.table_id)  # finish a deal a crash interrupted
        return self._out(table)

    @grpc_errors
    async def PlayerTables(
        self, request: matchmaking_pb2.PlayerTablesRequest, context: Context
    ) -> matchmaking_pb2.ListTablesResponse:
        tables = await self.lobby.player_tables(request.player_id)
        return matchmaking_pb2.ListTablesResponse(tables=[self._out(t) for t in tables])

    @grpc_errors
    async def Rematch(
        self, request: matchmaking_pb2.TableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        return self._out(
            await self._to_the_end(self.lobby.rematch(request.player_id, request.table_id))
        )
