"""A gateway that is stopping (issue 27, item 12): a command sent on a line whose channel is
already closed fails UNAVAILABLE (the client sends it again, to a live gateway) instead of a raw
grpc UsageError('Channel is closed.') ending the stream's command loop."""

from __future__ import annotations

import asyncio
import gc
import logging

import grpc
import pytest

from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common.errors import ServiceError
from services.gateway.command_lines import CommandLine


async def test_a_line_on_a_closed_channel_fails_unavailable_and_logs_no_task_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    channel = grpc.aio.insecure_channel("127.0.0.1:9")
    line = CommandLine(table_pb2_grpc.TableServiceStub(channel))
    request = table_pb2.SubmitCommandRequest(table_id="t1", player_id="p1", command_id="c1")
    await channel.close(None)  # closed at stop, while a Play stream still sends a command
    with pytest.raises(ServiceError) as failed:
        await line.submit(request, timeout=30)
    assert failed.value.status == grpc.StatusCode.UNAVAILABLE
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        await line.close()
        gc.collect()
        await asyncio.sleep(0)
    assert "never retrieved" not in caplog.text
