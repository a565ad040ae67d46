"""Composition root of the analysis service: the SQL queue and results, the Kafka consumer that
fills the queue, the worker that empties it, the gRPC API."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path

import grpc

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from services.analysis.adapters.sql_analyses import SqlAnalyses
from services.analysis.adapters.sql_fair_play import SqlFairPlay
from services.analysis.api import AnalysisServicer
from services.analysis.consumer import Enqueuer, consume
from services.analysis.judge import judge
from services.analysis.metrics import AnalysisMetrics
from services.analysis.settings import load_settings
from services.analysis.worker import Worker
from services.common import event_log
from services.common.connections import sql_check, sql_engine
from services.common.migrate import migrate
from services.common.service import ServiceApp, base_app
from services.contracts.topics import READERS, TABLE_EVENTS

SERVICE_NAME = analysis_pb2.DESCRIPTOR.services_by_name["AnalysisService"].full_name
MIGRATIONS = Path(__file__).with_name("migrations")
GAUGE_S = 5.0  # the backlog gauges: a dashboard needs no more


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("analysis", settings)
    metrics = AnalysisMetrics(app.metrics.registry)

    engine = sql_engine(settings.database_url)
    app.closes(engine.dispose)
    fair_play = SqlFairPlay(engine, settings.fair_play_threshold)
    store = SqlAnalyses(engine, fair_play)
    worker = Worker(
        store,
        settings.analysis_lease_s,
        settings.analysis_attempts,
        metrics,
        settings.replica or "analysis",
        partial(judge, luck=settings.luck == "judge"),
    )
    enqueuer = Enqueuer(store, metrics, worker.woken)
    servicer = AnalysisServicer(
        store, fair_play, settings.population_kept_s, settings.fair_play_threshold
    )

    def register(server: grpc.aio.Server) -> list[str]:
        analysis_pb2_grpc.add_AnalysisServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    events = event_log.open_event_log(settings, READERS)
    app.closes(events.close)
    start_consumer = event_log.consume_in_background(
        app,
        settings,
        events,
        "analysis",
        (TABLE_EVENTS,),
        lambda reader, stop: consume(enqueuer, reader, stop, metrics.lag),
    )

    async def start() -> None:
        await migrate(engine, MIGRATIONS)
        start_consumer()
        stop = app.background.stop
        app.background.spawn("worker", worker.run(stop))
        app.background.every("backlog", GAUGE_S, worker.gauge)

    app.register = register
    app.checks += [sql_check(engine)]
    app.on_start.append(start)
    return app
