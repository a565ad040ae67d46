"""Composition root of the table service: store, core, gRPC API, clock worker, Kafka relay."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

import grpc

from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common import kafka, tracing
from services.common.balanced import wallet_channel
from services.common.deps import redis_check, redis_client
from services.common.service import ServiceApp, base_app
from services.common.topics import TABLE_EVENTS, Namespace
from services.table.api import TableServicer
from services.table.clock import ClockWorker
from services.table.metrics import TableMetrics
from services.table.relay import EventRelay
from services.table.settings import load_settings
from services.table.shard_leases import ShardLeases
from services.table.store import TableStore
from services.table.tables import TableCore
from services.table.wallet_port import GrpcWallet

SERVICE_NAME = table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name
# The live-tables gauge reads one counter per owned shard: every 10 s is plenty for a dashboard.
GAUGE_S = 10.0


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("table", settings)
    metrics = TableMetrics(app.metrics)
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
    )
    store = TableStore(redis)
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    parts: dict[str, object] = {}

    def core() -> TableCore:
        return parts["core"]  # type: ignore[return-value]

    def register(server: grpc.aio.Server) -> list[str]:
        # Runs inside the event loop (grpc.aio channels need it), before start().
        channel = wallet_channel(
            settings.wallet_addr, tracing.client_interceptors(app.tracer_provider)
        )
        parts["channel"] = channel
        parts["core"] = TableCore(
            store,
            GrpcWallet(channel),
            metrics,
            settings.clock_scale,
            cache_size=settings.cache_size,
        )
        table_pb2_grpc.add_TableServiceServicer_to_server(TableServicer(core()), server)
        return [SERVICE_NAME]

    async def start() -> None:
        replica = settings.replica or "table"
        leases = ShardLeases(
            redis, settings.replica, on_change=lambda owned: metrics.shards.set(len(owned))
        )
        with contextlib.suppress(Exception):  # Redis not up yet: the lease task keeps trying
            await leases.renew()
        tasks.append(asyncio.create_task(leases.run(stop), name="shard-leases"))
        if settings.clock_workers:
            worker = ClockWorker(store, core(), leases)
            tasks.append(asyncio.create_task(worker.run(stop), name="clock"))
        if settings.relay:
            relay = EventRelay(
                store,
                lambda: kafka.producer(
                    settings.kafka_bootstrap, settings.kafka_idempotence, f"{replica}-relay"
                ),
                metrics,
                topic=Namespace(settings.kafka_namespace).topic(TABLE_EVENTS),
                leases=leases,
            )
            core().on_commit = relay.committed
            parts["relay"] = relay
            tasks.append(asyncio.create_task(relay.run(stop), name="relay"))
        tasks.append(asyncio.create_task(_gauge(store, leases, metrics, stop), name="gauges"))

    async def close() -> None:
        stop.set()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5)
        relay = parts.get("relay")
        if isinstance(relay, EventRelay):
            await relay.close()
        channel = parts.get("channel")
        if isinstance(channel, grpc.aio.Channel):
            await channel.close(None)
        await redis.aclose()

    app.register = register
    app.checks.append(redis_check(redis))
    app.on_start.append(start)
    app.on_stop.append(close)
    return app


async def _gauge(
    store: TableStore, leases: ShardLeases, metrics: TableMetrics, stop: asyncio.Event
) -> None:
    while not stop.is_set():
        with contextlib.suppress(Exception):
            metrics.live_tables.set(await store.live_tables(leases.owned()))
            memory = await store.redis.info("memory")
            metrics.redis_used.set(memory.get("used_memory", 0))
            metrics.redis_max.set(memory.get("maxmemory", 0))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), GAUGE_S)
