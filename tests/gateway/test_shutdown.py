"""A gateway that is stopping: what its streams' last presence reports do once the channel to
the table replicas is closed."""

from __future__ import annotations

from types import SimpleNamespace

import grpc

from bg.table.v1 import table_pb2_grpc
from services.gateway.play_streams import PlayStreams
from services.gateway.table_calls import TableCalls


async def test_a_presence_report_after_the_channel_closed_is_dropped_quietly() -> None:
    """At shutdown a stream's disconnect report meets a closed channel (grpc's UsageError): it
    ends without an error (no unretrieved task exception); the stream's presence lease runs out
    and a live gateway's sweeper reports the disconnect."""
    channel = grpc.aio.insecure_channel("127.0.0.1:9")
    await channel.close(None)
    streams = SimpleNamespace(tables=TableCalls(table_pb2_grpc.TableServiceStub(channel)))
    await PlayStreams.report(streams, "t1", "p1", False)  # type: ignore[arg-type]
    # (before the fix this raised grpc.aio.UsageError: "Channel is closed")
