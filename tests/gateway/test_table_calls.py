"""Issue 58, item 1: a table's reads go where its commands go (services/gateway/table_calls.py).
Two table replicas over gRPC on loopback, one of them a replica in trouble (it takes calls and
never answers, as one cut off from Valkey or paused does): a table the healthy replica owns is
read from it alone, whatever the other does; a table the troubled one owns is read from the
other once the owner has had `owner_s` to answer; with no owner known, the balanced channel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
import pytest

from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common.errors import ServiceError
from services.contracts.shards import VIRTUAL_SHARDS, shard_of
from services.gateway.replica_channels import ReplicaChannels
from services.gateway.table_calls import TableCalls
from services.gateway.table_owners import TableOwners


@dataclass
class Replica(table_pb2_grpc.TableServiceServicer):
    """A table replica's read side: answers with its name in the view's table id, or never."""

    name: str
    answers: bool = True
    calls: list[str] = field(default_factory=list)

    async def _held(self, method: str, table_id: str) -> None:
        self.calls.append(f"{method} {table_id}")
        if not self.answers:
            await asyncio.Event().wait()  # until the caller gives up

    async def GetView(
        self, request: table_pb2.GetViewRequest, context: object
    ) -> table_pb2.TableView:
        await self._held("GetView", request.table_id)
        return table_pb2.TableView(table_id=f"{self.name}:{request.table_id}", seq=1)

    async def SetPresence(
        self, request: table_pb2.SetPresenceRequest, context: object
    ) -> table_pb2.SetPresenceResponse:
        await self._held("SetPresence", request.table_id)
        return table_pb2.SetPresenceResponse(seq=2)

    async def GetMatchRecord(
        self, request: table_pb2.GetMatchRecordRequest, context: object
    ) -> table_pb2.MatchRecord:
        await self._held("GetMatchRecord", request.table_id)
        return table_pb2.MatchRecord(match_id=f"{self.name}:{request.match_id}")


@dataclass
class Running:
    replicas: dict[str, Replica]
    addresses: dict[str, str]
    servers: list[grpc.aio.Server]


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    # The reads alone of the service: mypy sees its other methods as abstract.
    replicas = {
        "healthy": Replica("healthy"),  # type: ignore[abstract]
        "troubled": Replica("troubled", answers=False),  # type: ignore[abstract]
    }
    servers, addresses = [], {}
    for name, replica in replicas.items():
        server = grpc.aio.server()
        table_pb2_grpc.add_TableServiceServicer_to_server(replica, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        servers.append(server)
        addresses[name] = f"127.0.0.1:{port}"
    yield Running(replicas, addresses, servers)
    for server in servers:
        await server.stop(0)


def _owners(addresses: dict[str, str], owner_of: dict[int, str]) -> TableOwners:
    """The map a gateway reads from the replicas' leases: `owner_of` by shard, the rest healthy."""
    owners = TableOwners(redis=None)
    owners.members = sorted(addresses)
    owners._addresses = dict(addresses)
    owners._by_shard = [addresses[owner_of.get(s, "healthy")] for s in range(VIRTUAL_SHARDS)]
    return owners


def _table_on(shards: set[int], prefix: str) -> str:
    return next(f"{prefix}{i}" for i in range(10_000) if shard_of(f"{prefix}{i}") in shards)


async def test_a_table_the_healthy_replica_owns_is_read_from_it_alone(running: Running) -> None:
    """The balanced channel sent half these reads to the troubled replica, where they stalled
    until their timeout: on 2026-12-05's main, 8 of 17 views through an untouched gateway."""
    table_id = _table_on({shard_of("x")}, "t")
    owners = _owners(running.addresses, {})
    replicas = ReplicaChannels(grpc.aio.insecure_channel)
    balanced = grpc.aio.insecure_channel(
        "ipv4:" + ",".join(running.addresses.values()),
        options=[("grpc.lb_policy_name", "round_robin")],
    )
    calls = TableCalls(table_pb2_grpc.TableServiceStub(balanced), owners, replicas, owner_s=30)
    try:
        for n in range(12):
            view = await calls.view(table_pb2.GetViewRequest(table_id=table_id), timeout=30)
            assert view.table_id == f"healthy:{table_id}"
            seq = await calls.presence(
                table_pb2.SetPresenceRequest(table_id=table_id, connected=bool(n % 2))
            )
            assert seq.seq == 2
            record = await calls.record(
                table_pb2.GetMatchRecordRequest(table_id=table_id, match_id="m1")
            )
            assert record.match_id == "healthy:m1"
    finally:
        await replicas.close()
        await balanced.close(None)
    assert running.replicas["troubled"].calls == []
    assert len(running.replicas["healthy"].calls) == 36


async def test_a_table_whose_owner_does_not_answer_is_read_from_another(
    running: Running,
) -> None:
    troubled = {s for s in range(VIRTUAL_SHARDS) if s % 2}
    table_id = _table_on(troubled, "u")
    owners = _owners(running.addresses, {s: "troubled" for s in troubled})
    replicas = ReplicaChannels(grpc.aio.insecure_channel)
    balanced = grpc.aio.insecure_channel(running.addresses["troubled"])  # never reached
    calls = TableCalls(table_pb2_grpc.TableServiceStub(balanced), owners, replicas, owner_s=0.2)
    try:
        view = await calls.view(table_pb2.GetViewRequest(table_id=table_id), timeout=30)
        assert view.table_id == f"healthy:{table_id}"
        assert running.replicas["troubled"].calls == [f"GetView {table_id}"]  # asked first
        # Time runs out on the owner with none left for another: the owner's failure, typed.
        with pytest.raises(ServiceError) as refused:
            await calls.view(table_pb2.GetViewRequest(table_id=table_id), timeout=0.1)
        assert refused.value.status == grpc.StatusCode.DEADLINE_EXCEEDED
        assert refused.value.code == "UPSTREAM_UNAVAILABLE"
    finally:
        await replicas.close()
        await balanced.close(None)


async def test_a_table_with_no_owner_known_goes_to_the_balanced_channel(running: Running) -> None:
    owners = TableOwners(redis=None)  # no lease read yet
    balanced = grpc.aio.insecure_channel(running.addresses["healthy"])
    calls = TableCalls(
        table_pb2_grpc.TableServiceStub(balanced),
        owners,
        ReplicaChannels(grpc.aio.insecure_channel),
    )
    try:
        view = await calls.view(table_pb2.GetViewRequest(table_id="t1"))
    finally:
        await balanced.close(None)
    assert view.table_id == "healthy:t1"
