"""Composition root of the leaderboard: SQL records, Redis ranks, Kafka consumer, gRPC API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import Counter, Gauge

from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from services.common import kafka
from services.common.deps import redis_check, redis_client, sql_check, sql_engine
from services.common.migrate import migrate
from services.common.service import ServiceApp, base_app
from services.common.topics import TABLE_EVENTS, WALLET_EVENTS, Namespace
from services.leaderboard.api import LeaderboardServicer
from services.leaderboard.consumer import EventHandler, consume, replay_player
from services.leaderboard.settings import load_settings
from services.leaderboard.store import BoardStore

SERVICE_NAME = leaderboard_pb2.DESCRIPTOR.services_by_name["LeaderboardService"].full_name
MIGRATIONS = Path(__file__).with_name("migrations")


class LeaderboardMetrics:
    def __init__(self, registry: Any) -> None:
        self.consumed = Counter(
            "bg_leaderboard_events_total",
            "Events consumed, by type and result.",
            ["type", "result"],
            registry=registry,
        )
        self.lag = Gauge(
            "bg_leaderboard_consumer_lag",
            "Messages behind the end of the topics.",
            registry=registry,
        )
        self.board_size = Gauge(
            "bg_leaderboard_board_size",
            "Players on each current board.",
            ["board"],
            registry=registry,
        )


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("leaderboard", settings)
    metrics = LeaderboardMetrics(app.metrics.registry)
    engine = sql_engine(settings.database_url)
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
    )
    store = BoardStore(engine, redis, settings.season_days * 86_400_000)
    handler = EventHandler(store, metrics)
    namespace = Namespace(settings.kafka_namespace)
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    servicer = LeaderboardServicer(
        store,
        lambda player: replay_player(handler, settings.kafka_bootstrap, player, namespace),
    )

    def register(server: grpc.aio.Server) -> list[str]:
        leaderboard_pb2_grpc.add_LeaderboardServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    async def start() -> None:
        await migrate(engine, MIGRATIONS)
        await store.resync()  # Redis is derived: rebuild the ranks from the SQL record

        def make_consumer() -> Any:
            return kafka.consumer(
                settings.kafka_bootstrap,
                namespace.group("leaderboard"),
                namespace.topic(TABLE_EVENTS),
                namespace.topic(WALLET_EVENTS),
                client_id=settings.replica or "leaderboard",
            )

        tasks.append(
            asyncio.create_task(
                kafka.keep_consuming(
                    make_consumer,
                    lambda c: consume(handler, c, stop, metrics.lag, namespace),
                    stop,
                    "events",
                ),
                name="consumer",
            )
        )
        tasks.append(asyncio.create_task(_sizes(store, servicer, metrics, stop), name="sizes"))

    async def close() -> None:
        stop.set()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5)
        await engine.dispose()
        await redis.aclose()

    app.register = register
    app.checks += [sql_check(engine), redis_check(redis)]
    app.on_start.append(start)
    app.on_stop.append(close)
    return app


async def _sizes(
    store: BoardStore,
    servicer: LeaderboardServicer,
    metrics: LeaderboardMetrics,
    stop: asyncio.Event,
) -> None:
    while not stop.is_set():
        with contextlib.suppress(Exception):
            season = servicer.season()
            for board, key in (
                ("trophies", "all"),
                ("league", season),
                ("scored", "players"),
                ("rating", "all"),
            ):
                metrics.board_size.labels(board).set(await store.size(board, key))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 5.0)
