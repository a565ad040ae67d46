"""Commands to the table replicas over a few long-lived streams (`SubmitCommandBatches`) instead
of a unary call per command: the same request and outcome, cheaper per command. Every call
waiting when the stream can take a message goes in that one message (and the replica answers
the same way), so under load a message carries many commands and an idle one never waits.

A table's commands go to the replica that owns its shard (services/gateway/table_owners.py),
on a stream to that replica alone, so they meet its state cache and its clocks. While no owner
is known, or the owner is unavailable, they take streams opened on one balanced channel
(services/common/balanced.py), round robin over the replicas; a table's commands then take the
same stream (its id's hash). Each outcome is matched to its call by id. When a stream breaks
(its replica died or is draining), every call still waiting on it fails with UNAVAILABLE and is
handed to the next stream (commands carry ids and are applied once), and the next call on the
broken one opens a new stream, on a live replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterable, AsyncIterator

import grpc

from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common.errors import ServiceError, home_replica
from services.gateway.replica_channels import ReplicaChannels
from services.gateway.table_owners import TableOwners

log = logging.getLogger("bg.gateway.commands")
# How long a command waits on its table's owner before another replica is asked (an owner
# whose host vanished never refuses a connection; the same command id is applied once).
OWNER_TIMEOUT_S = 3.0


class CommandLine:
    """One SubmitCommandBatches stream to one replica."""

    def __init__(self, stub: table_pb2_grpc.TableServiceAsyncStub) -> None:
        self.stub = stub
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[table_pb2.SubmitCommandOutcome]] = {}
        self._outgoing: asyncio.Queue[table_pb2.SubmitCommandCall | None] | None = None
        self._reader: asyncio.Task[None] | None = None

    def _open(self) -> asyncio.Queue[table_pb2.SubmitCommandCall | None]:
        queue: asyncio.Queue[table_pb2.SubmitCommandCall | None] = asyncio.Queue()

        async def calls() -> AsyncIterator[table_pb2.SubmitCommandCalls]:
            while (item := await queue.get()) is not None:
                batch = table_pb2.SubmitCommandCalls(calls=[item])
                while not queue.empty():
                    if (item := queue.get_nowait()) is None:
                        yield batch
                        return
                    batch.calls.append(item)
                yield batch

        stream = self.stub.SubmitCommandBatches(calls())
        self._outgoing = queue
        self._reader = asyncio.create_task(self._read(stream, queue))
        return queue

    async def _read(
        self,
        stream: AsyncIterable[table_pb2.SubmitCommandOutcomes],
        queue: asyncio.Queue[table_pb2.SubmitCommandCall | None],
    ) -> None:
        failure: BaseException = ServiceError(
            "UPSTREAM_UNAVAILABLE", "the command stream ended", status=grpc.StatusCode.UNAVAILABLE
        )
        try:
            async for batch in stream:
                for outcome in batch.outcomes:
                    future = self._waiting.pop(outcome.call_id, None)
                    if future is not None and not future.done():
                        future.set_result(outcome)
        except grpc.aio.AioRpcError as exc:
            failure = ServiceError(
                "UPSTREAM_UNAVAILABLE",
                f"{exc.code().name}: {exc.details()}"[:300],
                status=grpc.StatusCode.UNAVAILABLE,
            )
        finally:
            if self._outgoing is queue:
                self._outgoing = None  # the next call opens a new stream
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
            for call_id in list(self._waiting):
                future = self._waiting.pop(call_id)
                if not future.done():
                    future.set_exception(failure)

    async def submit(
        self, request: table_pb2.SubmitCommandRequest, timeout: float
    ) -> table_pb2.SubmitCommandResponse:
        try:
            queue = self._outgoing or self._open()
        except grpc.aio.UsageError:
            # The channel is closed: this gateway is stopping. UNAVAILABLE, as for a broken
            # stream: the client sends the command again, to a live gateway.
            raise ServiceError(
                "UPSTREAM_UNAVAILABLE",
                "this gateway is stopping",
                status=grpc.StatusCode.UNAVAILABLE,
            ) from None
        call_id = next(self._ids)
        future: asyncio.Future[table_pb2.SubmitCommandOutcome] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting[call_id] = future
        await queue.put(table_pb2.SubmitCommandCall(call_id=call_id, request=request))
        try:
            outcome = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self._waiting.pop(call_id, None)
            raise ServiceError(
                "UPSTREAM_UNAVAILABLE",
                "the table replica did not answer in time",
                status=grpc.StatusCode.DEADLINE_EXCEEDED,
            ) from None
        if outcome.WhichOneof("result") == "error":
            raise ServiceError.from_proto(outcome.error, _status(outcome.status))
        return outcome.response

    async def close(self) -> None:
        if self._outgoing is not None:
            await self._outgoing.put(None)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader


def _status(code: int) -> grpc.StatusCode:
    return next((s for s in grpc.StatusCode if s.value[0] == code), grpc.StatusCode.UNKNOWN)


class CommandLines:
    """A table's commands go to its owner (the replica holding its shard's lease, from
    `owners`) on a line of their own to that replica; while the owner is unknown or
    unavailable, to `streams` lines on one balanced stub: the line the table id hashes to, and
    the next one when that one is unavailable."""

    def __init__(
        self,
        stub: table_pb2_grpc.TableServiceAsyncStub,
        streams: int = 4,
        owners: TableOwners | None = None,
        replicas: ReplicaChannels | None = None,
    ) -> None:
        self.lines = [CommandLine(stub) for _ in range(max(1, streams))]
        self.owners = owners
        self.replicas = replicas  # a channel to each replica (shared with the table's reads)
        self._to_owner: dict[str, CommandLine] = {}

    def _owner_line(self, address: str) -> CommandLine:
        found = self._to_owner.get(address)
        if found is None:
            assert self.replicas is not None
            found = self._to_owner[address] = CommandLine(self.replicas.stub(address))
        return found

    async def submit(
        self, request: table_pb2.SubmitCommandRequest, timeout: float = 10.0
    ) -> table_pb2.SubmitCommandResponse:
        address = self.owners.address(request.table_id) if self.owners and self.replicas else ""
        if address and request.command_id:
            try:
                return await self._owner_line(address).submit(
                    request, min(timeout, OWNER_TIMEOUT_S)
                )
            except ServiceError as err:
                if err.status not in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                ):
                    raise
                # The owner is gone or unreachable (its lease passes on shortly): any replica
                # applies the command, once by its id, even if the owner got it after all.
                timeout = max(0.1, timeout - OWNER_TIMEOUT_S)
        start = home_replica(request.table_id, len(self.lines))
        failure: ServiceError | None = None
        for i in range(len(self.lines)):
            line = self.lines[(start + i) % len(self.lines)]
            try:
                return await line.submit(request, timeout)
            except ServiceError as err:
                if err.status != grpc.StatusCode.UNAVAILABLE:
                    raise
                failure = err
        assert failure is not None
        raise failure

    async def close(self) -> None:
        for line in self.lines:
            await line.close()
        for line in self._to_owner.values():
            await line.close()
        self._to_owner.clear()
