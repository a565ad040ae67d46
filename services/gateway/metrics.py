"""The gateway's own metrics: the connections and streams it holds, by transport; the WebSocket's
calls by outcome (gRPC's are the platform's bg_grpc_server_*, which a WebSocket call never
passes through); sign-ins by kind and outcome; each Play command's time from its arrival to its
answer (a Play stream's gRPC metric times the whole stream)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from services.common.metrics import LATENCY_BUCKETS

TRANSPORTS = ("grpc", "ws")
STREAMS = ("play", "watch", "friends")


class GatewayMetrics:
    def __init__(self, registry: Any) -> None:
        self.ws_connections = Gauge(
            "bg_gateway_ws_connections", "Open WebSocket connections.", registry=registry
        )
        self.streams = Gauge(
            "bg_gateway_streams",
            "Open streams, by kind (play, watch, friends) and transport (grpc, ws).",
            ["kind", "transport"],
            registry=registry,
        )
        self.ws_calls = Counter(
            "bg_gateway_ws_calls",
            "WebSocket calls answered, by method and status (OK, or the error's gRPC status).",
            ["method", "status"],
            registry=registry,
        )
        self.logins = Counter(
            "bg_gateway_logins",
            "Sign-ins answered, by kind (guest, device, email, service, refresh) and result "
            "(ok, or the refusal's code).",
            ["kind", "result"],
            registry=registry,
        )
        self.commands = Histogram(
            "bg_gateway_command_seconds",
            "Play commands, from their arrival at the gateway to their answer (refusals too).",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        for kind in STREAMS:  # every series there from the start: a rate() sees the first one
            for transport in TRANSPORTS:
                self.streams.labels(kind, transport)

    @classmethod
    def unregistered(cls) -> GatewayMetrics:
        """Metrics no scrape sees (a gateway's parts built without its app: tests)."""
        return cls(CollectorRegistry())

    @contextmanager
    def stream_open(self, kind: str, transport: str) -> Iterator[None]:
        """Count a stream as open while the block runs."""
        gauge = self.streams.labels(kind, transport)
        gauge.inc()
        try:
            yield
        finally:
            gauge.dec()
