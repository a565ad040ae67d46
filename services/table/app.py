"""Composition root of the table service: store, core, gRPC API, clock worker, Kafka relay."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping

import grpc

from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common import event_log, tracing
from services.common.balanced import channel_to
from services.common.connections import redis_check, redis_client
from services.common.lean_redis import LeanRedis
from services.common.service import ServiceApp, base_app
from services.common.store_clock import StoreClock, redis_times
from services.contracts import peers
from services.contracts.topics import READERS
from services.table.adapters.grpc_wallet import GrpcWallet
from services.table.adapters.redis_store import TableStore
from services.table.api import TableServicer
from services.table.clock import ClockWorker
from services.table.metrics import TableMetrics
from services.table.relay import EventRelay
from services.table.settings import TableSettings, load_settings
from services.table.shard_leases import ShardLeases
from services.table.table_core import TableCore

log = logging.getLogger("bg.table")
SERVICE_NAME = table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name
# The live-tables gauge reads one counter per owned shard: every 10 s is plenty for a dashboard.
GAUGE_S = 10.0


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("table", settings)
    metrics = TableMetrics(app.metrics)
    replica = settings.replica or "table"

    # The tables' state (behind the TableRepository port) and this replica's shards of it.
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
        timeout=settings.redis_timeout_s,
    )
    app.closes(redis.aclose)
    hot = None
    if (
        settings.lean_scripts
        and not settings.redis_cluster
        and settings.redis_url.startswith("redis://")
    ):
        hot = LeanRedis(settings.redis_url, settings.redis_timeout_s, app.metrics.redis_round_trips)
        app.closes(hot.aclose)
    store = TableStore(redis, hot)
    core: TableCore | None = None
    worker: ClockWorker | None = None

    def shards_changed(owned: list[int]) -> None:
        metrics.shards.set(len(owned))
        if core is not None:  # another replica's tables now: their states would only go stale
            core.cache.keep_shards(set(owned))
        if worker is not None:
            worker.shards_changed(owned)

    # One reference time for the rules, the clocks and the leases: the store's (I-40).
    store_clock = StoreClock(redis_times(redis))
    leases = ShardLeases(
        redis,
        settings.replica,
        ttl_ms=settings.shard_lease_ms,
        now=store_clock,
        on_change=shards_changed,
    )

    # The events' way out: one topic on a durable Kafka; generations, bounded, on a broker that
    # may forget, with this service's relays and keepers looking after them.
    events = event_log.open_event_log(settings, READERS, settings.kafka_idempotence)
    app.closes(events.close)
    keeper = events.housekeeper()
    if keeper is not None:
        app.closes(keeper.close)
    relay = EventRelay(
        store,
        events.publisher(f"{replica}-relay"),
        metrics,
        leases=leases,
        interval_s=settings.relay_interval_s,
        sweep_s=settings.relay_sweep_s,
        now=store_clock,  # the generations by the store's clock, as the keepers' (I-40)
    )
    app.closes(relay.close)

    def register(server: grpc.aio.Server) -> list[str]:
        # The wallet's client (grpc.aio channels need the running loop, so it is made here, not
        # above), the core on it, its API.
        nonlocal core
        wallet = app.channel(
            channel_to(
                peers.WALLET,
                settings.wallet_addr,
                tracing.client_interceptors(app.tracer_provider),
            )
        )
        core = TableCore(
            store,
            GrpcWallet(wallet),
            metrics,
            settings.clock_scale,
            cache_size=settings.cache_size,
            on_commit=relay.committed if settings.relay else None,
            now=store_clock,
        )
        servicer = TableServicer(core)
        app.on_drain.append(servicer.drain)
        table_pb2_grpc.add_TableServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    async def start() -> None:
        nonlocal worker
        assert core is not None  # the host registers before it starts
        leases.address = f"{_advertised(settings)}:{app.ports['grpc']}"
        with contextlib.suppress(Exception):  # Redis not up yet: the tasks keep trying
            await store_clock.sync()
            await leases.renew()
        background = app.background
        background.spawn("store-clock", store_clock.run(background.stop))
        background.spawn("shard-leases", leases.run(background.stop))
        if settings.clock_workers:
            worker = ClockWorker(store, core, leases, now=store_clock)
            core.local_clock = worker  # told of this replica's commits' deadlines directly
            background.spawn("clock", worker.run(background.stop))
        if settings.relay:  # the per-table event streams into Kafka
            background.spawn("relay", relay.run(background.stop))
            background.spawn("relay-lag", relay.watch_lag(background.stop))
        if keeper is not None:
            # By the store's clock: a keeper whose own ran ahead would let go of generations
            # still written; one behind, make again ones already read and deleted.
            kept = keeper
            background.every("topic-keeper", kept.every_s, lambda: kept.step(store_clock()), log)
        background.every("gauges", GAUGE_S, lambda: _gauges(store, leases, metrics))

    app.register = register
    app.checks.append(redis_check(redis))
    app.on_start.append(start)
    return app


def _advertised(settings: TableSettings) -> str:
    if settings.advertise_host:
        return settings.advertise_host
    return "127.0.0.1" if settings.host in ("", "0.0.0.0", "::", "[::]") else settings.host


async def _gauges(store: TableStore, leases: ShardLeases, metrics: TableMetrics) -> None:
    metrics.live_tables.set(await store.live_tables(leases.owned()))
    memory = await store.redis.info("memory")
    metrics.redis_used.set(memory.get("used_memory", 0))
    metrics.redis_max.set(memory.get("maxmemory", 0))
