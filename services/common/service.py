"""What a service provides to the shared host: its servicers, checks and lifecycle hooks."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import grpc
from opentelemetry.sdk.trace import TracerProvider

from services.common.background import Background
from services.common.metrics import ServiceMetrics
from services.common.settings import ServiceSettings

log = logging.getLogger("bg.host")


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
    loops; `on_drain` hooks run when the host starts draining, before the server's grace (a
    long-lived stream ends there, cleanly, instead of being cut when the grace runs out); after
    the server has drained the host stops those loops, then closes `resources` (an
    AsyncExitStack: what was made last is closed first).
    """

    name: str
    settings: ServiceSettings
    metrics: ServiceMetrics
    register: Callable[[grpc.aio.Server], list[str]] = lambda server: []
    checks: list[ReadinessCheck] = field(default_factory=list)
    on_start: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    on_drain: list[Callable[[], None]] = field(default_factory=list)
    resources: AsyncExitStack = field(default_factory=AsyncExitStack)
    background: Background = field(default_factory=Background)
    tracer_provider: TracerProvider | None = None
    ports: dict[str, int] = field(default_factory=dict)  # extra listeners (e.g. "ws") once started

    def closes(self, close: Callable[[], Awaitable[object]]) -> None:
        """Register a resource's close where it is made: the host closes them last made first,
        each on its own (one that fails is logged, the rest still run)."""

        async def logged() -> None:
            try:
                await close()
            except Exception:
                log.exception("error while closing", extra={"close": _name(close)})

        self.resources.push_async_callback(logged)

    def channel(self, made: grpc.aio.Channel) -> grpc.aio.Channel:
        """A client channel this service owns: closed at stop."""
        self.closes(lambda: made.close(None))
        return made


def _name(close: Callable[[], Awaitable[object]]) -> str:
    return str(getattr(close, "__qualname__", None) or repr(close))


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
