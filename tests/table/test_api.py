"""The table service over gRPC: create, commands, views without the seed, resumable streams,
presence, preferences, records only after the end, typed errors."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import grpc
import pytest
import redis.asyncio as redis_asyncio

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common.errors import ServiceError
from services.common.host import ServiceHost
from services.table.app import build_app
from tests.helpers import Valkey, error_of, kind

pytestmark = pytest.mark.integration
P = ["alice", "bob"]


@pytest.fixture
async def address(valkey: Valkey, redis: redis_asyncio.Redis) -> AsyncIterator[str]:
    """A table service (no relay, clocks at 1/100) on loopback."""
    host = ServiceHost(
        build_app(
            {
                "BG_GRPC_PORT": "0", "BG_METRICS_PORT": "0", **valkey.env,
                "BG_TABLE_RELAY": "false", "BG_CLOCK_SCALE": "0.01",
            }
        )
    )  # fmt: skip
    await host.start()
    yield f"127.0.0.1:{host.grpc_port}"
    await host.stop()


@pytest.fixture
async def stub(address: str) -> AsyncIterator[table_pb2_grpc.TableServiceAsyncStub]:
    async with grpc.aio.insecure_channel(address) as channel:
        yield table_pb2_grpc.TableServiceStub(channel)


def _cmd(**kind: object) -> table_pb2.Command:
    return table_pb2.Command(**kind)  # type: ignore[arg-type]


async def test_a_match_over_grpc(stub: table_pb2_grpc.TableServiceAsyncStub) -> None:
    created = await stub.CreateMatch(
        table_pb2.CreateMatchRequest(
            table_id="g1",
            match_id="gm1",
            player_ids=P,
            options=table_pb2.TableOptions(profile="casual"),
        )
    )
    assert len(created.fingerprint) == 64 and not created.existed
    view = await stub.GetView(table_pb2.GetViewRequest(table_id="g1", player_id="alice"))
    assert (
        view.fingerprint == created.fingerprint
        and view.phase == events_pb2.PHASE_MOVING
        and view.seq == created.seq
    )
    on_turn = P[view.turn]
    mine = await stub.GetView(table_pb2.GetViewRequest(table_id="g1", player_id=on_turn))
    assert mine.lit and mine.dice  # movable checkers and lit points on your turn
    assert "seed" not in str(view).lower()
    lit = mine.lit[0]
    move = events_pb2.Step(to=lit.to[0])
    setattr(move, "from", getattr(lit, "from"))
    seat = mine.seat
    done = await stub.SubmitCommand(
        table_pb2.SubmitCommandRequest(
            table_id="g1",
            player_id=on_turn,
            seat=seat,
            command_id="c1",
            expected_seq=mine.seq,
            command=_cmd(move=move),
        )
    )
    assert done.seq > mine.seq and kind(done.events[0]) == "checkers_moved"
    assert [e.seq for e in done.events] == list(range(mine.seq + 1, done.seq + 1))
    with pytest.raises(grpc.aio.AioRpcError) as early:
        await stub.GetMatchRecord(table_pb2.GetMatchRecordRequest(table_id="g1", match_id="gm1"))
    assert error_of(early.value).code == "MATCH_NOT_OVER"
    await stub.SubmitCommand(
        table_pb2.SubmitCommandRequest(
            table_id="g1", player_id="bob", seat=1, command=_cmd(leave=table_pb2.Empty())
        )
    )
    record = await stub.GetMatchRecord(
        table_pb2.GetMatchRecordRequest(table_id="g1", match_id="gm1")
    )
    import hashlib

    assert hashlib.sha256(bytes.fromhex(record.seed_hex)).hexdigest() == created.fingerprint
    assert record.rolls and record.end_reason == events_pb2.END_REASON_ABANDONED


def _submit(
    table_id: str, player: str, seq: int = 0, **kind: object
) -> table_pb2.SubmitCommandRequest:
    command = _cmd(**kind) if kind else None
    return table_pb2.SubmitCommandRequest(
        table_id=table_id, player_id=player, seat=0, expected_seq=seq, command=command
    )


ROLL = table_pb2.Empty()


@pytest.mark.parametrize(
    ("request_", "status", "code"),
    [
        (_submit("nope", "alice", roll=ROLL), grpc.StatusCode.NOT_FOUND, "UNKNOWN_TABLE"),
        (_submit("g2", "mallory", roll=ROLL), grpc.StatusCode.PERMISSION_DENIED, "NOT_YOUR_SEAT"),
        (_submit("g2", "alice"), grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED"),
        (_submit("g2", "alice", 999, roll=ROLL), grpc.StatusCode.FAILED_PRECONDITION, "STALE_SEQ"),
    ],
)
async def test_typed_errors(
    stub: table_pb2_grpc.TableServiceAsyncStub,
    request_: table_pb2.SubmitCommandRequest,
    status: grpc.StatusCode,
    code: str,
) -> None:
    await stub.CreateMatch(
        table_pb2.CreateMatchRequest(
            table_id="g2",
            match_id="gm2",
            player_ids=P,
            options=table_pb2.TableOptions(profile="scored"),
        )
    )
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.SubmitCommand(request_)
    assert err.value.code() == status
    assert error_of(err.value).code == code


async def test_presence_and_preferences(stub: table_pb2_grpc.TableServiceAsyncStub) -> None:
    await stub.SetPreferences(table_pb2.SetPreferencesRequest(player_id="alice", auto_roll=True))
    await stub.CreateMatch(
        table_pb2.CreateMatchRequest(
            table_id="g3",
            match_id="gm3",
            player_ids=P,
            options=table_pb2.TableOptions(profile="wagered", bet=100, match_length=3),
        )
    )
    view = await stub.GetView(table_pb2.GetViewRequest(table_id="g3", player_id="alice"))
    assert view.auto_roll
    assert list(view.away) == [True, True]  # I-41: nobody has connected to a new match yet
    for player in P:
        await stub.SetPresence(
            table_pb2.SetPresenceRequest(table_id="g3", player_id=player, connected=True)
        )
    away = await stub.SetPresence(
        table_pb2.SetPresenceRequest(table_id="g3", player_id="bob", connected=False)
    )
    view = await stub.GetView(table_pb2.GetViewRequest(table_id="g3", player_id="alice"))
    assert list(view.away) == [False, True] and view.seq == away.seq
    await stub.SetPresence(
        table_pb2.SetPresenceRequest(table_id="g3", player_id="bob", connected=True)
    )
    assert list(
        (await stub.GetView(table_pb2.GetViewRequest(table_id="g3", player_id="bob"))).away
    ) == [False, False]


async def test_commands_over_one_stream_with_failover(
    stub: table_pb2_grpc.TableServiceAsyncStub, address: str
) -> None:
    """The gateway's command lines on one balanced channel (issue 14 req. 2): many commands on
    a SubmitCommands stream, typed errors carried back, and a dead replica among the addresses
    skipped by round robin (its calls retried on the live one)."""
    from infra.cluster.embedded import free_port
    from services.common.balanced import channel_to
    from services.contracts import peers
    from services.gateway.command_lines import CommandLines

    await stub.CreateMatch(
        table_pb2.CreateMatchRequest(
            table_id="s1", match_id="sm1", player_ids=P,
            options=table_pb2.TableOptions(profile="casual"),
        )
    )  # fmt: skip
    live = address
    async with channel_to(peers.TABLE, [f"127.0.0.1:{free_port()}", live]) as balanced:
        lines = CommandLines(table_pb2_grpc.TableServiceStub(balanced), streams=3)
        view = await stub.GetView(table_pb2.GetViewRequest(table_id="s1", player_id=P[0]))
        mover = view.turn
        request = table_pb2.SubmitCommandRequest(
            table_id="s1", player_id=P[1 - mover], seat=1 - mover, command_id="x",
            command=_cmd(roll=table_pb2.Empty()),
        )  # fmt: skip
        with pytest.raises(ServiceError) as refused:  # a rules refusal comes back typed
            await lines.submit(request, timeout=5)
        assert refused.value.code in ("WRONG_PHASE", "NOT_YOUR_TURN") and refused.value.rejection
        assert refused.value.status == grpc.StatusCode.FAILED_PRECONDITION
        again = await asyncio.gather(
            *(
                lines.submit(
                    table_pb2.SubmitCommandRequest(
                        table_id="s1",
                        player_id=P[mover],
                        seat=mover,
                        command_id="same",
                        command=_cmd(leave=table_pb2.Empty()),
                    ),
                    timeout=5,
                )
                for _ in range(3)
            )
        )
        assert len({r.seq for r in again}) == 1  # one command id, applied once
        assert sum(not r.duplicate for r in again) == 1
        await lines.close()


async def _deal(stub: table_pb2_grpc.TableServiceAsyncStub, table_id: str) -> table_pb2.TableView:
    await stub.CreateMatch(
        table_pb2.CreateMatchRequest(
            table_id=table_id, match_id=f"m-{table_id}", player_ids=P,
            options=table_pb2.TableOptions(profile="casual"),
        )
    )  # fmt: skip
    return await stub.GetView(table_pb2.GetViewRequest(table_id=table_id, player_id=P[0]))


def _call(
    call_id: int, table_id: str, seat: int, command_id: str, command: str = "leave"
) -> table_pb2.SubmitCommandCall:
    request = table_pb2.SubmitCommandRequest(
        table_id=table_id, player_id=P[seat], seat=seat, command_id=command_id,
        command=_cmd(**{command: table_pb2.Empty()}),
    )  # fmt: skip
    return table_pb2.SubmitCommandCall(call_id=call_id, request=request)


async def test_a_batch_with_a_refused_command_in_the_middle(
    stub: table_pb2_grpc.TableServiceAsyncStub,
) -> None:
    """Issue 25: three commands in one SubmitCommandBatches message, the middle one refused
    (a roll by the seat not on turn): the other two (a leave each) are applied, each outcome
    carries its call's id and, when accepted, the seq it committed; the refused one gets its
    typed error and its table does not move."""
    views = {t: await _deal(stub, t) for t in ("b1", "b2", "b3")}
    calls = [
        _call(1, "b1", views["b1"].turn, "c1"),
        _call(2, "b2", 1 - views["b2"].turn, "c2", "roll"),  # not this seat's turn
        _call(3, "b3", views["b3"].turn, "c3"),
    ]
    requests: asyncio.Queue[table_pb2.SubmitCommandCalls | None] = asyncio.Queue()
    await requests.put(table_pb2.SubmitCommandCalls(calls=calls))

    async def outgoing() -> AsyncIterator[table_pb2.SubmitCommandCalls]:
        while (item := await requests.get()) is not None:
            yield item

    stream = stub.SubmitCommandBatches(outgoing())
    outcomes: dict[int, table_pb2.SubmitCommandOutcome] = {}
    async for batch in stream:
        outcomes.update((o.call_id, o) for o in batch.outcomes)
        if len(outcomes) == 3:
            await requests.put(None)
    assert sorted(outcomes) == [1, 2, 3]
    refused = outcomes[2]
    assert refused.WhichOneof("result") == "error" and refused.error.code == "NOT_YOUR_TURN"
    assert refused.status == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    after = await stub.GetView(table_pb2.GetViewRequest(table_id="b2", player_id=P[0]))
    assert after.seq == views["b2"].seq and list(after.dice) == list(views["b2"].dice)
    for call_id, table_id in ((1, "b1"), (3, "b3")):
        reply = outcomes[call_id].response
        assert reply.seq > views[table_id].seq and not reply.duplicate
        # The result only: the update reaches every seat one way, the table's ring (issue 62).
        assert not reply.HasField("update") and not reply.events
        now = await stub.GetView(table_pb2.GetViewRequest(table_id=table_id, player_id=P[0]))
        assert now.seq == reply.seq


async def test_the_previous_releases_command_stream_still_answers(
    stub: table_pb2_grpc.TableServiceAsyncStub,
) -> None:
    """A gateway of the previous release, mid rolling upgrade, still uses SubmitCommands: one
    call a message, the events in the response (no update)."""
    view = await _deal(stub, "old1")

    async def one() -> AsyncIterator[table_pb2.SubmitCommandCall]:
        yield _call(7, "old1", view.turn, "o1")

    outcomes = [o async for o in stub.SubmitCommands(one())]
    assert [o.call_id for o in outcomes] == [7]
    reply = outcomes[0].response
    assert reply.seq > view.seq and kind(reply.events[-1]) == "match_closed"
    assert not reply.HasField("update")


async def test_a_draining_replica_ends_its_command_streams_cleanly(
    valkey: Valkey, redis: redis_asyncio.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """A replica that stops answers the commands its streams took and ends them (OK) as it
    starts draining, so the gateway sends what follows elsewhere at once; a stream cut when the
    grace ran out failed its last status in gRPC's core and logged an ERROR (seen in the demo
    test's count of ERROR lines). The grace here is a minute: the stop takes far less."""
    host = ServiceHost(
        build_app(
            {
                "BG_GRPC_PORT": "0", "BG_METRICS_PORT": "0", **valkey.env,
                "BG_TABLE_RELAY": "false", "BG_CLOCK_SCALE": "0.01",
                "BG_SHUTDOWN_GRACE_S": "60",
            }
        )
    )  # fmt: skip
    await host.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel:
            stub = table_pb2_grpc.TableServiceStub(channel)
            view = await _deal(stub, "d1")
            requests: asyncio.Queue[table_pb2.SubmitCommandCalls | None] = asyncio.Queue()
            await requests.put(table_pb2.SubmitCommandCalls(calls=[_call(1, "d1", view.turn, "d")]))

            async def outgoing() -> AsyncIterator[table_pb2.SubmitCommandCalls]:
                while (item := await requests.get()) is not None:
                    yield item

            stream = stub.SubmitCommandBatches(outgoing())
            first = await stream.read()
            assert isinstance(first, table_pb2.SubmitCommandOutcomes)
            assert [o.call_id for o in first.outcomes] == [1]  # the client keeps its side open
            await asyncio.wait_for(host.stop(), 30)
            assert await stream.code() == grpc.StatusCode.OK
            await requests.put(None)
    finally:
        await host.stop()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
