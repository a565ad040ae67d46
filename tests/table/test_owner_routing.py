"""Owner routing (issue 25): a gateway sends a table's commands to the replica holding its
shard's lease, read from the leases the replicas write (real Valkey, two real table services
over gRPC on loopback). A command that reaches another replica, a lease that moves mid-stream
and a stale owner are all still applied exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator

import grpc
import pytest
import redis.asyncio as redis_asyncio

from bg.table.v1 import table_pb2, table_pb2_grpc
from client.play_wire import next_command
from engine import bots
from services.common.balanced import channel_to
from services.common.host import ServiceHost
from services.contracts import peers
from services.contracts.shards import assign, shard_of
from services.gateway.command_lines import CommandLines
from services.gateway.replica_channels import ReplicaChannels
from services.gateway.table_owners import TableOwners
from services.table.app import build_app
from tests.helpers import Valkey

pytestmark = pytest.mark.integration
P = ["alice", "bob"]
NAMES = ("table-a", "table-b")


def _host(valkey: Valkey, name: str) -> ServiceHost:
    env = {
        "BG_GRPC_PORT": "0", "BG_METRICS_PORT": "0", **valkey.env, "BG_REPLICA": name,
        "BG_TABLE_RELAY": "false",
    }  # fmt: skip
    return ServiceHost(build_app(env))


@pytest.fixture
async def replicas(
    valkey: Valkey, redis: redis_asyncio.Redis
) -> AsyncIterator[dict[str, ServiceHost]]:
    hosts = {name: _host(valkey, name) for name in NAMES}
    for host in hosts.values():
        await host.start()
    yield hosts
    for host in hosts.values():
        with contextlib.suppress(Exception):  # a test may have stopped it already
            await host.stop()


def _address(host: ServiceHost) -> str:
    return f"127.0.0.1:{host.grpc_port}"


def _commands_applied(host: ServiceHost) -> float:
    registry = host.app.metrics.registry
    return sum(
        sample.value
        for metric in registry.collect()
        if metric.name == "bg_table_commands"
        for sample in metric.samples
        if sample.name == "bg_table_commands_total" and sample.labels["outcome"] == "ok"
    )


async def _owners(redis: redis_asyncio.Redis, members: list[str]) -> TableOwners:
    owners = TableOwners(redis)
    for _ in range(100):
        await owners.refresh()
        if owners.members == members and all(owners._addresses.get(m) for m in members):
            return owners
        await asyncio.sleep(0.05)
    raise AssertionError(f"the leases never showed {members}: {owners.members}")


def _tables_of(member: str, members: list[str], count: int, prefix: str) -> list[str]:
    """Table ids whose shard `member` owns among `members`."""
    owned = set(assign(members)[member])
    ids = (f"{prefix}{i}" for i in range(10_000))
    return [t for t in ids if shard_of(t) in owned][:count]


async def _deal(stub: table_pb2_grpc.TableServiceAsyncStub, table_id: str) -> None:
    await stub.CreateMatch(
        table_pb2.CreateMatchRequest(
            table_id=table_id, match_id=f"m-{table_id}", player_ids=P,
            options=table_pb2.TableOptions(profile="casual", match_length=3),
        )
    )  # fmt: skip


async def _step(
    stub: table_pb2_grpc.TableServiceAsyncStub, lines: CommandLines, table_id: str, n: int
) -> tuple[int, table_pb2.SubmitCommandResponse]:
    """One legal command for whoever must act, through `lines`; (seq seen, its reply)."""
    view = await stub.GetView(table_pb2.GetViewRequest(table_id=table_id, player_id=P[0]))
    seat = view.decider
    mine = await stub.GetView(table_pb2.GetViewRequest(table_id=table_id, player_id=P[seat]))
    cmd = next_command(mine, bots.random_bot, random.Random(n))
    assert cmd is not None, mine
    request = table_pb2.SubmitCommandRequest(
        table_id=table_id, player_id=P[seat], seat=seat, command_id=f"{table_id}-{n}",
        expected_seq=mine.seq, command=cmd,
    )  # fmt: skip
    return mine.seq, await lines.submit(request, timeout=10)


async def test_commands_go_to_the_replica_that_owns_the_tables_shard(
    replicas: dict[str, ServiceHost], redis: redis_asyncio.Redis
) -> None:
    members = sorted(NAMES)
    owners = await _owners(redis, members)
    tables = {name: _tables_of(name, members, 4, "own") for name in NAMES}
    for name, ids in tables.items():
        for table_id in ids:
            assert owners.address(table_id) == _address(replicas[name])
    addresses = [_address(h) for h in replicas.values()]
    async with channel_to(peers.TABLE, addresses) as balanced:
        stub = table_pb2_grpc.TableServiceStub(balanced)
        lines = CommandLines(stub, 2, owners, ReplicaChannels(grpc.aio.insecure_channel))
        for ids in tables.values():
            for table_id in ids:
                await _deal(stub, table_id)
        before = {name: _commands_applied(h) for name, h in replicas.items()}
        for ids in tables.values():
            for table_id in ids:
                for n in range(3):
                    await _step(stub, lines, table_id, n)
        await lines.close()
    applied = {name: _commands_applied(h) - before[name] for name, h in replicas.items()}
    assert applied == {"table-a": 12, "table-b": 12}  # each table's 3 on its owner, none astray


async def test_a_command_to_another_replica_then_to_the_stale_owner_applies_each_once(
    replicas: dict[str, ServiceHost], redis: redis_asyncio.Redis
) -> None:
    """The owner caches the table; a command reaches the other replica (a gateway whose map is
    old) and moves the table on; the next command through the owner, judged first on its stale
    cache, is refused by the commit's seq check, read again and applied: every command once,
    in order."""
    members = sorted(NAMES)
    owners = await _owners(redis, members)
    (table_id,) = _tables_of("table-a", members, 1, "stale")
    other = table_pb2_grpc.TableServiceStub(
        grpc.aio.insecure_channel(_address(replicas["table-b"]))
    )
    async with channel_to(peers.TABLE, [_address(h) for h in replicas.values()]) as balanced:
        stub = table_pb2_grpc.TableServiceStub(balanced)
        lines = CommandLines(stub, 1, owners, ReplicaChannels(grpc.aio.insecure_channel))
        await _deal(stub, table_id)
        seqs = []
        _, first = await _step(stub, lines, table_id, 0)  # the owner (a) caches it
        seqs.append(first.seq)
        view = await stub.GetView(table_pb2.GetViewRequest(table_id=table_id, player_id=P[0]))
        seat = view.decider
        mine = await stub.GetView(table_pb2.GetViewRequest(table_id=table_id, player_id=P[seat]))
        cmd = next_command(mine, bots.random_bot, random.Random(5))
        assert cmd is not None
        astray = table_pb2.SubmitCommandRequest(
            table_id=table_id, player_id=P[seat], seat=seat, command_id="astray",
            command=cmd,
        )  # fmt: skip
        moved = await other.SubmitCommand(astray)  # applied by the non-owner (b)
        assert not moved.duplicate and moved.seq > first.seq
        seqs.append(moved.seq)
        for n in range(1, 4):  # the owner's cache is behind: each still applies once
            _, reply = await _step(stub, lines, table_id, n)
            assert not reply.duplicate
            seqs.append(reply.seq)
        again = await other.SubmitCommand(astray)  # the same id again: the first result
        assert again.duplicate and again.seq == moved.seq
        await lines.close()
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    final = await _view_on(replicas["table-b"], table_id)
    assert final.seq == seqs[-1]  # nothing applied beyond what was answered


async def _view_on(host: ServiceHost, table_id: str) -> table_pb2.TableView:
    async with grpc.aio.insecure_channel(_address(host)) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        return await stub.GetView(table_pb2.GetViewRequest(table_id=table_id, player_id=P[0]))


async def test_a_lease_moving_mid_stream_loses_no_command_and_doubles_none(
    replicas: dict[str, ServiceHost], redis: redis_asyncio.Redis
) -> None:
    """Commands stream to table-a's tables while table-a stops (its lease passes to table-b):
    every command is answered, each exactly once, and the gateways' map moves the tables to
    table-b."""
    members = sorted(NAMES)
    owners = await _owners(redis, members)
    tables = _tables_of("table-a", members, 3, "moving")
    survivor = replicas["table-b"]
    async with channel_to(peers.TABLE, [_address(h) for h in replicas.values()]) as balanced:
        stub = table_pb2_grpc.TableServiceStub(balanced)
        lines = CommandLines(stub, 2, owners, ReplicaChannels(grpc.aio.insecure_channel))
        for table_id in tables:
            await _deal(stub, table_id)
        answered: dict[str, list[int]] = {t: [] for t in tables}
        stopped = asyncio.Event()
        refresher = asyncio.create_task(owners.run(stopped))

        reader = table_pb2_grpc.TableServiceStub(grpc.aio.insecure_channel(_address(survivor)))

        async def play(table_id: str) -> None:
            for n in range(12):
                if n == 4 and table_id == tables[0]:
                    await replicas["table-a"].stop()  # hands its shards over at once
                for _ in range(20):  # an answer lost to the stop: asked again, same id
                    try:
                        seen, reply = await _step(reader, lines, table_id, n)
                        break
                    except Exception:
                        await asyncio.sleep(0.1)
                else:
                    raise AssertionError(f"command {n} on {table_id} never answered")
                # A retried id that was applied after all answers with its first result.
                assert reply.seq > seen or (reply.duplicate and reply.seq <= seen)
                answered[table_id].append(reply.seq)

        await asyncio.gather(*(play(t) for t in tables))
        stopped.set()
        await refresher
        await lines.close()
    for table_id in tables:
        seqs = answered[table_id]
        assert len(seqs) == 12 and seqs == sorted(seqs) and len(set(seqs)) == 12
        final = await _view_on(survivor, table_id)
        assert final.seq == seqs[-1]  # each command applied once: nothing beyond the answers
    for _ in range(100):  # the stopped replica's lease is gone (handed over, or run out)
        await owners.refresh()
        if owners.members == ["table-b"]:
            break
        await asyncio.sleep(0.1)
    assert all(owners.address(t) == _address(survivor) for t in tables)
