"""OpenTelemetry tracing, chosen by settings and off by default.

When on, gRPC server and client calls carry W3C trace context, so one player's command can be
followed from the gateway through the table service to the wallet. Events on Kafka carry no trace
context (a table commit's record holds many commands' events); a consumer's work is found by the
event and table ids in its logs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter


def make_provider(
    service: str, exporter: str, endpoint: str, replica: str = ""
) -> TracerProvider | None:
    """A tracer provider for `exporter` ("none" returns None: tracing off)."""
    if exporter == "none":
        return None
    span_exporter: SpanExporter
    if exporter == "console":
        span_exporter = ConsoleSpanExporter(out=sys.stdout)  # the stdout of now, not of import
    elif exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        span_exporter = OTLPSpanExporter(endpoint=endpoint, insecure=endpoint.startswith("http://"))
    else:
        raise ValueError(f"unknown trace exporter {exporter!r}")
    attrs = {"service.name": f"bg-{service}"}
    if replica:
        attrs["service.instance.id"] = replica
    provider = TracerProvider(resource=Resource.create(attrs))
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
    return provider


def server_interceptors(provider: TracerProvider | None) -> list[Any]:
    if provider is None:
        return []
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    return [aio_server_interceptor(tracer_provider=provider)]  # type: ignore[no-untyped-call]


def client_interceptors(provider: TracerProvider | None) -> Sequence[Any]:
    if provider is None:
        return []
    from opentelemetry.instrumentation.grpc import aio_client_interceptors

    return list(aio_client_interceptors(tracer_provider=provider))  # type: ignore[no-untyped-call]


def tracer(provider: TracerProvider | None, name: str) -> trace.Tracer:
    if provider is None:
        return trace.NoOpTracer()
    return provider.get_tracer(name)
