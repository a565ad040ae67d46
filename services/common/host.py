"""Runs a ServiceApp: gRPC server with health and reflection, metrics, readiness, shutdown.

Lifecycle (as grpc's graceful-shutdown example and Kubernetes expect):
  start: bind gRPC and metrics ports, NOT_SERVING, app hooks (a migration among them; until
  they are done every call but health's is refused STARTING: services/common/starting_gate.py),
  then readiness decides SERVING;
  stop (SIGTERM/SIGINT): health NOT_SERVING for good, optional delay for load balancers,
  stop accepting and drain in-flight calls within the grace period, then close the app's clients.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from services.common import gc_pauses, logs, loop_lag, priority, tracing
from services.common.balanced import SERVER_KEEPALIVE_OPTIONS
from services.common.metrics import MetricsInterceptor
from services.common.service import ServiceApp
from services.common.settings import ServiceSettings, SettingsError, redacted
from services.common.starting_gate import StartingGate

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

log = logging.getLogger("bg.host")

GC_OLDER = (5, 10)  # young collections between gen-1 ones, gen-1 between full ones
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class ServiceHost:
    def __init__(self, app: ServiceApp) -> None:
        self.app = app
        self.settings = app.settings
        self.health = HealthServicer()
        self.grpc_port = 0
        self.metrics_port = 0
        self.serving = False
        self._server: grpc.aio.Server | None = None
        self._httpd: WSGIServer | None = None
        self._service_names: list[str] = []
        self._readiness: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()
        self._stopping = False
        self._last_check: dict[str, bool] = {}
        self.gate = StartingGate()  # no call served before the start hooks are done

    async def start(self) -> None:
        s = self.settings
        interceptors = [
            *tracing.server_interceptors(self.app.tracer_provider),
            MetricsInterceptor(self.app.metrics),
            self.gate,  # inside the metrics: a call refused while starting is counted
        ]
        # Clients keep idle connections alive with pings (services/common/balanced.py).
        server = grpc.aio.server(interceptors=interceptors, options=SERVER_KEEPALIVE_OPTIONS)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        self._service_names = self.app.register(server)
        reflection.enable_server_reflection(
            [
                *self._service_names,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ],
            server,
        )
        self.grpc_port = server.add_insecure_port(f"{s.host}:{s.grpc_port}")
        if self.grpc_port == 0:
            raise OSError(f"cannot bind gRPC port {s.host}:{s.grpc_port}")
        self.app.ports["grpc"] = self.grpc_port
        await self._set_all(NOT_SERVING)
        await server.start()
        self._server = server
        self._httpd, _ = start_http_server(
            s.metrics_port, s.host, registry=self.app.metrics.registry
        )
        self.metrics_port = self._httpd.server_address[1]
        for hook in self.app.on_start:
            await hook()
        self.gate.open()
        log.info("started", extra={"grpc_port": self.grpc_port, "metrics_port": self.metrics_port})
        log.debug("settings", extra={"settings": redacted(s)})  # BG_LOG_LEVEL=DEBUG shows them
        await self._check_once()
        self._readiness = asyncio.create_task(self._readiness_loop(), name="readiness")
        metrics = self.app.metrics
        self.app.background.spawn(
            "loop-lag",
            loop_lag.watch(self.app.background.stop, metrics.loop_lag_seconds, metrics.loop_stalls),
        )
        # Everything built so far (modules, servers, caches) lives as long as the process: keep
        # it out of the collector's scans, and collect young objects less often. Measured on
        # the command path (benchmarks/bench_gateway.py): the collector was a visible share.
        gc.collect()
        gc.freeze()
        gc.set_threshold(self.settings.gc_young, *GC_OLDER)

    async def _set_all(self, status: int) -> None:
        for name in ["", *self._service_names]:
            await self.health.set(name, status)

    async def _check_once(self) -> None:
        ok = True
        for check in self.app.checks:
            try:
                await asyncio.wait_for(check.probe(), self.settings.readiness_timeout_s)
                passed = True
            except Exception as exc:  # any failure of a probe means not ready
                passed = False
                if self._last_check.get(check.name, True):
                    log.warning(
                        "readiness check failed", extra={"check": check.name, "error": repr(exc)}
                    )
            self._last_check[check.name] = passed
            self.app.metrics.check_ok.labels(self.app.name, check.name).set(1 if passed else 0)
            ok = ok and passed
        if self._stopping:
            return
        if ok != self.serving:
            log.info("health", extra={"status": "SERVING" if ok else "NOT_SERVING"})
        self.serving = ok
        self.app.metrics.serving.labels(self.app.name).set(1 if ok else 0)
        await self._set_all(SERVING if ok else NOT_SERVING)

    async def _readiness_loop(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.settings.readiness_interval_s)
            await self._check_once()

    async def stop(self) -> None:
        """Graceful: NOT_SERVING first, then drain, then close clients. Safe to call twice."""
        if self._stopping:
            await self._stopped.wait()
            return
        self._stopping = True
        try:
            log.info("shutting down", extra={"grace_s": self.settings.shutdown_grace_s})
            self.serving = False
            self.app.metrics.serving.labels(self.app.name).set(0)
            await self.health.enter_graceful_shutdown()
            if self._readiness is not None:
                self._readiness.cancel()
            if self.settings.shutdown_delay_s:
                await asyncio.sleep(self.settings.shutdown_delay_s)
            for drain in self.app.on_drain:
                drain()
            if self._server is not None:
                await self._server.stop(self.settings.shutdown_grace_s)
            await self.app.background.close()
            await self.app.resources.aclose()
            if self.app.tracer_provider is not None:
                self.app.tracer_provider.shutdown()
        finally:
            if self._httpd is not None:
                self._httpd.shutdown()
                self._httpd.server_close()
            self._stopped.set()
            log.info("stopped")

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Start, serve until SIGTERM/SIGINT (or `stop` is set), then stop gracefully."""
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
        try:
            await self.start()
            await stop.wait()
        finally:
            await self.stop()


def dump_tasks() -> None:
    """SIGUSR1: every asyncio task's stack into the log (what a stuck loop waits on)."""
    for task in asyncio.all_tasks():
        frames = task.get_stack(limit=8)
        where = " <- ".join(f"{f.f_code.co_name}:{f.f_lineno}" for f in reversed(frames))
        log.warning("task", extra={"task": task.get_name(), "stack": where})


def main(name: str, build: Callable[[dict[str, str] | None], ServiceApp]) -> None:
    """Entry point of `python -m services.<name>`: settings, logs, run. Exit 2 on bad settings."""
    try:
        app = build(None)
    except SettingsError as exc:
        print(f"{name}: configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logs(name, app.settings)
    priority.apply(app.settings.nice)  # before any thread starts: they inherit it
    gc_pauses.watch(app.metrics.gc_pause_seconds, app.metrics.gc_cpu_seconds)
    if app.settings.gc_freeze:
        gc_pauses.freeze_survivors()
    with asyncio.Runner(loop_factory=_loop_factory(app.settings.event_loop)) as runner:
        runner.run(ServiceHost(app).run())


def _loop_factory(kind: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """`uvloop` when asked for (BG_EVENT_LOOP) and installed; asyncio's own loop otherwise."""
    if kind == "uvloop":
        try:
            import uvloop
        except ImportError:
            log.warning("BG_EVENT_LOOP=uvloop but uvloop is not installed; using asyncio")
            return None
        return uvloop.new_event_loop
    return None


def configure_logs(name: str, settings: ServiceSettings) -> None:
    logs.configure(name, settings.log_level, settings.log_format, settings.replica)
