"""The gRPC servicer of bg.table.v1.TableService: proto <-> table core."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc

from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common.errors import ServiceError, grpc_errors, infrastructure_failure
from services.contracts.table_options import rules_from_proto
from services.table import convert
from services.table.table_core import Submitted, TableCore

Context = grpc.aio.ServicerContext[Any, Any]
log = logging.getLogger("bg.table.api")


class TableServicer(table_pb2_grpc.TableServiceServicer):
    def __init__(self, core: TableCore) -> None:
        self.core = core
        self._readers: set[asyncio.Task[None]] = set()  # each command stream's reader

    def drain(self) -> None:
        """The replica is stopping: each command stream stops reading, answers the commands it
        took and ends (OK), so its gateway sends what follows to another replica (commands
        carry ids: applied once). Cut at the end of the grace instead, a stream's last status
        failed in gRPC's core and logged an ERROR."""
        for reader in list(self._readers):
            reader.cancel()

    @grpc_errors
    async def CreateMatch(
        self, request: table_pb2.CreateMatchRequest, context: Context
    ) -> table_pb2.CreateMatchResponse:
        rules = rules_from_proto(request.options)
        fingerprint, seq, existed = await self.core.create_match(
            request.table_id, request.match_id, list(request.player_ids), rules
        )
        return table_pb2.CreateMatchResponse(
            table_id=request.table_id,
            match_id=request.match_id,
            fingerprint=fingerprint,
            seq=seq,
            existed=existed,
        )

    @grpc_errors
    async def SubmitCommand(
        self, request: table_pb2.SubmitCommandRequest, context: Context
    ) -> table_pb2.SubmitCommandResponse:
        return await self._submit(request)

    async def SubmitCommands(
        self, requests: AsyncIterator[table_pb2.SubmitCommandCall], context: Context
    ) -> AsyncIterator[table_pb2.SubmitCommandOutcome]:
        """Commands from a gateway of the previous release (one call per message)."""

        async def batches() -> AsyncIterator[list[table_pb2.SubmitCommandCall]]:
            async for call in requests:
                yield [call]

        async for ready in self._outcomes(batches(), with_events=True):
            for outcome in ready:
                yield outcome

    async def SubmitCommandBatches(
        self, requests: AsyncIterator[table_pb2.SubmitCommandCalls], context: Context
    ) -> AsyncIterator[table_pb2.SubmitCommandOutcomes]:
        async def batches() -> AsyncIterator[list[table_pb2.SubmitCommandCall]]:
            async for message in requests:
                yield list(message.calls)

        async for ready in self._outcomes(batches(), with_events=False):
            yield table_pb2.SubmitCommandOutcomes(outcomes=ready)

    async def _outcomes(
        self, batches: AsyncIterator[list[table_pb2.SubmitCommandCall]], with_events: bool
    ) -> AsyncIterator[list[table_pb2.SubmitCommandOutcome]]:
        """Each call handled as SubmitCommand is, concurrently (tables are independent; a
        refused call changes nothing and holds up no other); the outcomes ready are handed on
        together as soon as there is one (a batch never waits for more)."""
        ready: list[table_pb2.SubmitCommandOutcome] = []
        wake = asyncio.Event()
        running: set[asyncio.Task[None]] = set()
        done = False

        async def handle(call: table_pb2.SubmitCommandCall) -> None:
            outcome = table_pb2.SubmitCommandOutcome(call_id=call.call_id)
            try:
                submitted = await self._submitted(call.request)
                reply = outcome.response
                reply.seq, reply.duplicate = submitted.seq, submitted.duplicate
                if with_events:  # an older gateway's; a batch's answer is the seq alone
                    reply.events.extend(submitted.events)
            except ServiceError as err:
                outcome.error.CopyFrom(err.to_proto())
                outcome.status = err.status.value[0]
            except Exception as exc:  # as a unary call would end: UNAVAILABLE or UNKNOWN
                mapped = infrastructure_failure(exc)
                if mapped is None:
                    log.exception("command failed", extra={"table_id": call.request.table_id})
                    mapped = ServiceError("INTERNAL", repr(exc), status=grpc.StatusCode.UNKNOWN)
                outcome.error.CopyFrom(mapped.to_proto())
                outcome.status = mapped.status.value[0]
            ready.append(outcome)
            wake.set()

        async def read() -> None:
            nonlocal done
            try:
                async for calls in batches:
                    for call in calls:
                        task = asyncio.create_task(handle(call))
                        running.add(task)
                        task.add_done_callback(running.discard)
            finally:
                if running:
                    await asyncio.gather(*running, return_exceptions=True)
                done = True
                wake.set()

        reader = asyncio.create_task(read())
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)
        try:
            while True:
                if ready:
                    out, ready[:] = list(ready), []
                    yield out
                elif done:
                    return
                else:
                    wake.clear()
                    await wake.wait()
        finally:
            reader.cancel()
            for task in list(running):
                task.cancel()

    async def _submit(
        self, request: table_pb2.SubmitCommandRequest
    ) -> table_pb2.SubmitCommandResponse:
        result = await self._submitted(request)
        return table_pb2.SubmitCommandResponse(
            seq=result.seq, events=result.events, duplicate=result.duplicate
        )

    async def _submitted(self, request: table_pb2.SubmitCommandRequest) -> Submitted:
        cmd = convert.engine_command(request.command, request.seat)
        return await self.core.submit(
            request.table_id,
            request.player_id,
            request.seat,
            request.command_id,
            request.expected_seq,
            cmd,
        )

    @grpc_errors
    async def GetMatchOutcome(
        self, request: table_pb2.GetMatchOutcomeRequest, context: Context
    ) -> table_pb2.MatchOutcome:
        return convert.outcome_proto(await self.core.outcome(request.table_id, request.match_id))

    @grpc_errors
    async def CloseMatch(
        self, request: table_pb2.CloseMatchRequest, context: Context
    ) -> table_pb2.CloseMatchResponse:
        return table_pb2.CloseMatchResponse(seq=await self.core.operator_close(request.table_id))

    @grpc_errors
    async def GetView(
        self, request: table_pb2.GetViewRequest, context: Context
    ) -> table_pb2.TableView:
        if request.spectator:
            loaded, view = await self.core.spectator_view(request.table_id)
        else:
            loaded, view = await self.core.view(request.table_id, request.player_id)
        out = convert.view_proto(view, loaded.meta, loaded.seq, loaded.state.match.options)
        out.spectator = request.spectator
        return out

    @grpc_errors
    async def SetPresence(
        self, request: table_pb2.SetPresenceRequest, context: Context
    ) -> table_pb2.SetPresenceResponse:
        seq = await self.core.presence(request.table_id, request.player_id, request.connected)
        return table_pb2.SetPresenceResponse(seq=seq)

    @grpc_errors
    async def SetPreferences(
        self, request: table_pb2.SetPreferencesRequest, context: Context
    ) -> table_pb2.SetPreferencesResponse:
        await self.core.set_auto_roll(request.player_id, request.auto_roll)
        return table_pb2.SetPreferencesResponse()

    @grpc_errors
    async def GetMatchRecord(
        self, request: table_pb2.GetMatchRecordRequest, context: Context
    ) -> table_pb2.MatchRecord:
        return convert.record_proto(await self.core.record(request.table_id, request.match_id))
