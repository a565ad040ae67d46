"""Issue 13 req. 7: a client whose Play stream open is refused (rate limited) hears it at once
and can retry, instead of sending into a dead stream and stalling for its timeout."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from bg.table.v1 import table_pb2
from services.common.play_wire import PlaySession


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
        session = PlaySession(stub, "t1", [])  # type: ignore[arg-type]
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
