"""What a service provides to the shared host: its servicers, checks and lifecycle hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
from opentelemetry.sdk.trace import TracerProvider

from services.common.background import Background
from services.common.metrics import ServiceMetrics
from services.common.settings import ServiceSettings


@dataclass(frozen=True)
class ReadinessCheck:
    """A dependency probe: raises (or times out) when the dependency cannot serve."""

    name: str
    probe: Callable[[], Awaitable[object]]


@dataclass
class ServiceApp:
    """A service as the host sees it. Built by each service's `app.build_app` (composition root).

    `register` adds the domain servicers to the server and returns their full names (for health
    and reflection); `on_start` hooks run once the port is bound and start the `background`
    loops; after the server has drained the host stops those loops, then runs the `on_stop`
    hooks (last added first), which close the clients.
    """

    name: str
    settings: ServiceSettings
    metrics: ServiceMetrics
    register: Callable[[grpc.aio.Server], list[str]] = lambda server: []
    checks: list[ReadinessCheck] = field(default_factory=list)
    on_start: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    on_stop: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    background: Background = field(default_factory=Background)
    tracer_provider: TracerProvider | None = None
    ports: dict[str, int] = field(default_factory=dict)  # extra listeners (e.g. "ws") once started

    def closes(self, close: Callable[[], Awaitable[object]]) -> None:
        """Register a resource's close where it is made: the host runs the on_stop hooks last
        added first, each on its own (one that fails is logged, the rest still run)."""
        self.on_stop.append(close)

    def channel(self, made: grpc.aio.Channel) -> grpc.aio.Channel:
        """A client channel this service owns: closed at stop."""
        self.closes(lambda: made.close(None))
        return made


def base_app(name: str, settings: ServiceSettings) -> ServiceApp:
    """A ServiceApp with this service's metrics registry and tracer (if tracing is on)."""
    from services.common.tracing import make_provider

    provider = make_provider(name, settings.otel_exporter, settings.otel_endpoint, settings.replica)
    metrics = ServiceMetrics(name)
    return ServiceApp(
        name=name,
        settings=settings,
        metrics=metrics,
        background=Background(metrics.background_failed),
        tracer_provider=provider,
    )
