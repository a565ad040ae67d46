"""The analysis API served over loopback gRPC on a store of the test's."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from bg.analysis.v1 import analysis_pb2_grpc
from services.analysis.adapters.sql_analyses import SqlAnalyses
from services.analysis.api import AnalysisServicer


@contextlib.asynccontextmanager
async def serving(store: SqlAnalyses) -> AsyncIterator[analysis_pb2_grpc.AnalysisServiceAsyncStub]:
    server = grpc.aio.server()
    analysis_pb2_grpc.add_AnalysisServiceServicer_to_server(
        AnalysisServicer(store, store.fair_play), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield analysis_pb2_grpc.AnalysisServiceStub(channel)
    finally:
        await server.stop(None)
