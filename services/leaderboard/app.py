"""Composition root of the leaderboard: SQL records, Redis ranks, Kafka consumer, gRPC API."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import Counter, Gauge

from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from services.common import kafka
from services.common.deps import redis_check, redis_client, sql_check, sql_engine
from services.common.event_log import Incarnation
from services.common.migrate import migrate
from services.common.service import ServiceApp, base_app
from services.common.topics import TABLE_EVENTS, WALLET_EVENTS, Namespace
from services.leaderboard.api import LeaderboardServicer
from services.leaderboard.consumer import EventHandler, consume, replay_player
from services.leaderboard.effects import ALL
from services.leaderboard.settings import load_settings
from services.leaderboard.store import BoardRepository, SqlBoardStore

SERVICE_NAME = leaderboard_pb2.DESCRIPTOR.services_by_name["LeaderboardService"].full_name
MIGRATIONS = Path(__file__).with_name("migrations")
SIZES_S = 5.0  # the board-size gauges: a dashboard needs no more


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
    namespace = Namespace(settings.kafka_namespace)

    # The record (SQL) and the ranks derived from it (Redis), behind the boards' port.
    engine = sql_engine(settings.database_url)
    app.closes(engine.dispose)
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
    )
    app.closes(redis.aclose)
    store = SqlBoardStore(engine, redis)

    # The core: events in, boards out; the API reads them.
    handler = EventHandler(store, settings.season_ms, metrics)
    servicer = LeaderboardServicer(
        store,
        settings.season_ms,
        lambda player: replay_player(handler, player),
    )

    def register(server: grpc.aio.Server) -> list[str]:
        leaderboard_pb2_grpc.add_LeaderboardServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    event_log = kafka.event_log(settings)
    incarnation = Incarnation(settings.kafka_bootstrap, event_log) if event_log.embedded else None
    if incarnation is not None:
        app.closes(incarnation.close)

    def make_consumer() -> Any:  # aiokafka: untyped
        return kafka.consumer_of(
            settings,
            "leaderboard",
            (TABLE_EVENTS, WALLET_EVENTS),
            settings.replica or "leaderboard",
            incarnation,
            settings.consumer_share,
        )

    async def start() -> None:
        await migrate(engine, MIGRATIONS)
        await store.resync()  # Redis is derived: rebuild the ranks from the SQL record
        stop = app.background.stop
        app.background.spawn(
            "consumer",
            kafka.keep_consuming(
                make_consumer,
                lambda c: consume(handler, c, stop, metrics.lag, namespace),
                stop,
                "events",
            ),
        )
        app.background.every("board-sizes", SIZES_S, lambda: _sizes(store, servicer, metrics))

    app.register = register
    app.checks += [sql_check(engine), redis_check(redis)]
    app.on_start.append(start)
    return app


async def _sizes(
    store: BoardRepository, servicer: LeaderboardServicer, metrics: LeaderboardMetrics
) -> None:
    season = servicer.season()
    current = (("trophies", ALL), ("league", season), ("scored", "players"), ("rating", ALL))
    for board, key in current:
        metrics.board_size.labels(board).set(await store.size(board, key))
