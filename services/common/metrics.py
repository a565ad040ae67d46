"""Prometheus metrics every service exports, on a registry of its own.

A registry per service instance (not the global default) keeps in-process tests that run several
services side by side from colliding, and keeps import free of side effects.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from services.common.handler_wrap import wrapped

# 20 ms is issue 43's bound on a pause.
GC_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class ServiceMetrics:
    """The metrics shared by all services: RPCs, health, readiness checks."""

    def __init__(self, service: str, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.service = service
        # The process's CPU seconds, memory and files (process_*): the capacity report's costs
        # by service (loadtests/capacity.py), from the overview dashboard's panels.
        ProcessCollector(registry=self.registry)
        self.rpc_total = Counter(
            "bg_grpc_server_handled_total",
            "gRPC calls handled, by method and status code.",
            ["service", "method", "code"],
            registry=self.registry,
        )
        self.rpc_seconds = Histogram(
            "bg_grpc_server_handling_seconds",
            "gRPC call handling time (for streams: until the stream ends).",
            ["service", "method"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.serving = Gauge(
            "bg_service_serving",
            "1 while the service reports SERVING on its health service, else 0.",
            ["service"],
            registry=self.registry,
        )
        self.check_ok = Gauge(
            "bg_readiness_check_ok",
            "1 if the last run of a dependency check passed, else 0.",
            ["service", "check"],
            registry=self.registry,
        )
        self.gc_pause_seconds = Histogram(
            "bg_gc_pause_seconds",
            "Garbage collections by generation and how long each stopped the process.",
            ["generation"],
            buckets=GC_BUCKETS,
            registry=self.registry,
        )
        self.gc_frozen_objects = Gauge(
            "bg_gc_frozen_objects",
            "Objects frozen out of the garbage collector (what start built, and with BG_GC_FREEZE "
            "what survived each middle collection): steady when nothing leaks.",
            registry=self.registry,
        )
        self.gc_frozen_objects.set_function(gc.get_freeze_count)
        self.gc_cpu_seconds = Histogram(
            "bg_gc_cpu_seconds",
            "Garbage collections by generation and the CPU each took (the pause less the time "
            "the process waited for a core).",
            ["generation"],
            buckets=GC_BUCKETS,
            registry=self.registry,
        )
        self.loop_lag_seconds = Histogram(
            "bg_event_loop_lag_seconds",
            "How late the event loop ran a probe due every 50 ms: what anything due (a deadline, "
            "a reply) waits beyond its time.",
            buckets=GC_BUCKETS,
            registry=self.registry,
        )
        self.loop_stalls = Counter(
            "bg_event_loop_stalls_total",
            "Probes more than 20 ms late, by cause: busy (Python held the loop for most of it) "
            "or waiting (no core for the process, or a system call).",
            ["cause"],
            registry=self.registry,
        )
        self.redis_round_trips = Counter(
            "bg_redis_round_trips_total",
            "Requests this process sent to Redis and waited for (a pipeline or script is one).",
            ["service"],
            registry=self.registry,
        ).labels(service)
        self.background_failures = Counter(
            "bg_background_step_failures_total",
            "Steps of a background loop (an audit, a sweep, a gauge) that raised, by loop.",
            ["service", "loop"],
            registry=self.registry,
        )

    def background_failed(self, loop: str) -> None:
        self.background_failures.labels(self.service, loop).inc()


class MetricsInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Counts and times every call, labelled by method and final status code."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self._m = metrics

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        handler = await continuation(details)
        if handler is None:
            return handler
        method = details.method
        return wrapped(handler, lambda kind, behaviour: self._wrap(kind, behaviour, method))

    def _observe(
        self, method: str, context: Any, started: float, error: BaseException | None
    ) -> None:
        code = context.code()
        if error is not None and code in (None, grpc.StatusCode.OK):
            name = "CANCELLED" if isinstance(error, asyncio.CancelledError) else "UNKNOWN"
        else:
            name = (code or grpc.StatusCode.OK).name
        self._m.rpc_total.labels(self._m.service, method, name).inc()
        self._m.rpc_seconds.labels(self._m.service, method).observe(time.perf_counter() - started)

    def _wrap(self, kind: str, behaviour: Any, method: str) -> Any:
        observe = self._observe
        if kind in ("unary_unary", "stream_unary"):

            async def unary(request: Any, context: Any) -> Any:
                started = time.perf_counter()
                try:
                    response = await behaviour(request, context)
                except BaseException as exc:
                    observe(method, context, started, exc)
                    raise
                observe(method, context, started, None)
                return response

            return unary

        if not inspect.isasyncgenfunction(behaviour):
            # Handlers that write with context.write() stay coroutines, so a cancelled call
            # cancels them at once (their finally blocks run immediately).
            async def writing(request: Any, context: Any) -> None:
                started = time.perf_counter()
                try:
                    await behaviour(request, context)
                except BaseException as exc:
                    observe(method, context, started, exc)
                    raise
                observe(method, context, started, None)

            return writing

        async def streaming(request: Any, context: Any) -> AsyncIterator[Any]:
            started = time.perf_counter()
            try:
                async for item in behaviour(request, context):
                    yield item
            except BaseException as exc:
                observe(method, context, started, exc)
                raise
            observe(method, context, started, None)

        return streaming
