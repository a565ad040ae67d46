"""Issue 13 req. 7: a client whose Play stream open is refused (rate limited) hears it at once
and can retry, instead of sending into a dead stream and stalling for its timeout. Issue 14: a
load test's players think before they act."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

import grpc
import pytest

from bg.table.v1 import table_pb2
from client.play_wire import PlaySession
from services.contracts.vocabulary import FINISHED

if TYPE_CHECKING:  # the typed async stub exists for the type checker alone
    from bg.gateway.v1.gateway_pb2_grpc import GatewayServiceAsyncStub


class _RefusedCall:
    """A Play call the gateway refused: its first read fails with RESOURCE_EXHAUSTED."""

    def __aiter__(self) -> _RefusedCall:
        return self

    async def __anext__(self) -> Any:
        await asyncio.sleep(0.01)
        raise grpc.aio.AioRpcError(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            grpc.aio.Metadata(),
            grpc.aio.Metadata(),
            details="RATE_LIMITED: at most 50 calls per second",
            debug_error_string="",
        )

    def cancel(self) -> bool:
        return True


class _Stub:
    def __init__(self) -> None:
        self.opened = 0

    def Play(self, requests: Any, metadata: Any = None) -> _RefusedCall:
        self.opened += 1
        return _RefusedCall()


async def test_a_refused_stream_open_fails_fast_and_a_retry_opens_again() -> None:
    stub = _Stub()
    for attempt in (1, 2):  # what the bots worker does on its next pass
        session = PlaySession(cast("GatewayServiceAsyncStub", stub), "t1", [])
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await session.open(timeout_s=30)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert loop.time() - started < 5  # not the 30 s timeout
        with pytest.raises(grpc.aio.AioRpcError):  # nothing is sent into the dead stream
            await session.send(table_pb2.Command(roll=table_pb2.Empty()))
        await session.close()
        assert stub.opened == attempt


class _Scripted(PlaySession):
    """A session whose pushed views the test sets; `send` records and the table moves on."""

    def __init__(self) -> None:
        super().__init__(cast("GatewayServiceAsyncStub", _Stub()), "t1", [])
        self.sent: list[tuple[int, float]] = []  # (expected seq, loop time)

    async def send(
        self,
        cmd: table_pb2.Command,
        expected_seq: int = 0,
        timeout_s: float = 30.0,
        command_id: str = "",
    ) -> Any:
        self.sent.append((expected_seq, asyncio.get_running_loop().time()))
        self.view = table_pb2.TableView(seq=expected_seq + 1, phase=FINISHED[0])
        return None


async def test_a_thinking_player_waits_before_acting_and_skips_a_view_the_table_left() -> None:
    """Load tests pace their players like people (issue 14 soak: 2 s a command). A view the
    table moved past while the player thought (a clock fired) gets no command: the player
    decides afresh on the new one."""
    session = _Scripted()
    session.view = table_pb2.TableView(seq=5)
    last = await session.play_out(lambda v: table_pb2.Command(roll=table_pb2.Empty()), 10, 0.2)
    assert last.phase in FINISHED and [seq for seq, _ in session.sent] == [5]

    moved = _Scripted()
    moved.view = table_pb2.TableView(seq=5)

    async def a_clock_fires() -> None:
        await asyncio.sleep(0.05)
        moved.view = table_pb2.TableView(seq=6)

    clock = asyncio.create_task(a_clock_fires())
    await moved.play_out(lambda v: table_pb2.Command(roll=table_pb2.Empty()), 10, 0.2)
    await clock
    assert [seq for seq, _ in moved.sent] == [6]  # nothing sent for seq 5
