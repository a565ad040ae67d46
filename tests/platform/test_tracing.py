"""Tracing is off by default and, when on, records a span per gRPC call."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.host import ServiceHost
from services.common.tracing import make_provider, server_interceptors
from services.table.app import build_app

pytestmark = pytest.mark.integration


def test_tracing_off_by_default() -> None:
    assert make_provider("table", "none", "http://127.0.0.1:4317") is None
    assert server_interceptors(None) == []
    assert build_app({}).tracer_provider is None


def test_unknown_exporter_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown trace exporter"):
        make_provider("table", "zipkin", "")


async def test_console_exporter_records_server_spans(
    valkey_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = build_app(
        {
            "BG_GRPC_PORT": "0",
            "BG_METRICS_PORT": "0",
            "BG_REDIS_URL": valkey_url,
            "BG_OTEL_EXPORTER": "console",
            "BG_REPLICA": "table-9",
        }
    )
    assert app.tracer_provider is not None
    host = ServiceHost(app)
    await host.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
            await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=2)
    finally:
        await host.stop()  # flushes the batch processor
    out = capsys.readouterr().out
    assert '"name": "/grpc.health.v1.Health/Check"' in out
    assert '"service.instance.id": "table-9"' in out
