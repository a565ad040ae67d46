"""The table service's calls other than commands. A table's go where its commands go
(services/gateway/command_lines.py): its views, its match record and its players' presence
reports, to the replica that owns the table's shard (services/gateway/table_owners.py).
Another replica is asked only when the owner does not answer within `owner_s`, then the
balanced channel to every replica (while no owner is known, or none of the known replicas
answered).

Why not the balanced channel for all of them: it spreads calls round robin over every replica,
so while one replica stalls (cut off from Valkey, paused, restarting) half the reads of tables
it does not own stalled with it, through gateways the fault never touched. Routed by owner, a
player whose table's owner and gateway are healthy never waits on a replica in trouble; a
player whose owner is in trouble waits at most `owner_s` before another replica answers (any
replica can serve any table from Valkey)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeAlias, TypeVar

import grpc

from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common.errors import ServiceError, remote_call
from services.gateway.replica_channels import ReplicaChannels
from services.gateway.table_owners import TableOwners

T = TypeVar("T")
Stub: TypeAlias = "table_pb2_grpc.TableServiceAsyncStub"  # a name of the type stubs' alone
# How long a read waits on one replica before the next is asked: far above a healthy replica's
# answer (milliseconds, hundreds under the heaviest load measured), short of a player's patience.
OWNER_S = 1.0
UNANSWERED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class TableCalls:
    def __init__(
        self,
        balanced: Stub,
        owners: TableOwners | None = None,
        replicas: ReplicaChannels | None = None,
        owner_s: float = OWNER_S,
    ) -> None:
        self.balanced = balanced  # every replica, round robin: the last resort
        self.owners = owners
        self.replicas = replicas
        self.owner_s = owner_s

    async def view(
        self, request: table_pb2.GetViewRequest, timeout: float = 10.0
    ) -> table_pb2.TableView:
        return await self._routed(
            request.table_id, lambda stub, t: stub.GetView(request, timeout=t), timeout
        )

    async def record(
        self, request: table_pb2.GetMatchRecordRequest, timeout: float = 10.0
    ) -> table_pb2.MatchRecord:
        return await self._routed(
            request.table_id, lambda stub, t: stub.GetMatchRecord(request, timeout=t), timeout
        )

    async def presence(
        self, request: table_pb2.SetPresenceRequest, timeout: float = 5.0
    ) -> table_pb2.SetPresenceResponse:
        """A presence report is idempotent (the table answers an unchanged presence with its
        seq), so a report the owner got but did not answer may go again to another."""
        return await self._routed(
            request.table_id, lambda stub, t: stub.SetPresence(request, timeout=t), timeout
        )

    async def preferences(self, request: table_pb2.SetPreferencesRequest) -> None:
        """A player's, not a table's: any replica."""
        await remote_call(self.balanced.SetPreferences(request, timeout=10))

    async def _routed(
        self, table_id: str, send: Callable[[Stub, float], Awaitable[T]], timeout: float
    ) -> T:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        owner = self.owners.address(table_id) if self.owners and self.replicas else ""
        if owner:
            assert self.owners is not None and self.replicas is not None
            failure: ServiceError | None = None
            for address in (owner, *self.owners.others(owner)):
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    return await remote_call(
                        send(self.replicas.stub(address), min(left, self.owner_s))
                    )
                except ServiceError as err:
                    if err.status not in UNANSWERED:
                        raise
                    failure = err
            left = deadline - loop.time()
            if left <= 0 and failure is not None:
                raise failure
            timeout = left
        return await remote_call(send(self.balanced, timeout))
