"""Composition root of the leaderboard: SQL records, Redis ranks, Kafka consumer, gRPC API."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import grpc

from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from services.common import event_log
from services.common.connections import redis_check, redis_client, sql_check, sql_engine
from services.common.migrate import migrate
from services.common.service import ServiceApp, base_app
from services.contracts.topics import READERS, TABLE_EVENTS, TOURNAMENT_EVENTS, WALLET_EVENTS
from services.leaderboard.adapters.sql_boards import SqlBoardStore
from services.leaderboard.api import LeaderboardServicer
from services.leaderboard.consumer import EventHandler, consume, rebuild, replay_player
from services.leaderboard.effects import ALL
from services.leaderboard.metrics import LeaderboardMetrics
from services.leaderboard.ports import BoardRepository
from services.leaderboard.settings import load_settings

SERVICE_NAME = leaderboard_pb2.DESCRIPTOR.services_by_name["LeaderboardService"].full_name
MIGRATIONS = Path(__file__).with_name("migrations")
SIZES_S = 5.0  # the board-size gauges: a dashboard needs no more


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("leaderboard", settings)
    metrics = LeaderboardMetrics(app.metrics.registry)

    # The record (SQL) and the ranks derived from it (Redis), behind the boards' port.
    engine = sql_engine(settings.database_url)
    app.closes(engine.dispose)
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
        timeout=settings.redis_timeout_s,
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

    events = event_log.open_event_log(settings, READERS)
    app.closes(events.close)
    start_consumer = event_log.consume_in_background(
        app,
        settings,
        events,
        "leaderboard",
        (TABLE_EVENTS, WALLET_EVENTS, TOURNAMENT_EVENTS),
        lambda reader, stop: consume(handler, reader, stop, metrics.lag),
    )

    async def start() -> None:
        await migrate(engine, MIGRATIONS)
        await store.resync()  # Redis is derived: rebuild the ranks from the SQL record
        start_consumer()
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


async def rebuild_boards(environ: Mapping[str, str] | None = None) -> int:
    """Empty the boards and apply the leaderboard's archive again (`python -m
    services.leaderboard rebuild`, with the service's settings; restart the service after):
    how many events it applied."""
    settings = load_settings(environ)
    engine = sql_engine(settings.database_url)
    redis = redis_client(
        settings.redis_url, cluster=settings.redis_cluster, timeout=settings.redis_timeout_s
    )
    try:
        await migrate(engine, MIGRATIONS)
        return await rebuild(EventHandler(SqlBoardStore(engine, redis), settings.season_ms))
    finally:
        await engine.dispose()
        await redis.aclose()
