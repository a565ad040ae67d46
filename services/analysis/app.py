"""Composition root of the analysis service: the SQL queue and results, the Kafka consumer that
fills the queue, the worker that empties it, the gRPC API."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from services.analysis.adapters.sql_analyses import SqlAnalyses
from services.analysis.api import AnalysisServicer
from services.analysis.consumer import Enqueuer, consume
from services.analysis.metrics import AnalysisMetrics
from services.analysis.settings import load_settings
from services.analysis.worker import Worker
from services.common import kafka
from services.common.deps import sql_check, sql_engine
from services.common.event_log import Incarnation
from services.common.migrate import migrate
from services.common.service import ServiceApp, base_app
from services.common.topics import TABLE_EVENTS, Namespace

SERVICE_NAME = analysis_pb2.DESCRIPTOR.services_by_name["AnalysisService"].full_name
MIGRATIONS = Path(__file__).with_name("migrations")
GAUGE_S = 5.0  # the backlog gauges: a dashboard needs no more


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("analysis", settings)
    metrics = AnalysisMetrics(app.metrics.registry)
    namespace = Namespace(settings.kafka_namespace)

    engine = sql_engine(settings.database_url)
    app.closes(engine.dispose)
    store = SqlAnalyses(engine)
    worker = Worker(
        store, settings.analysis_lease_s, settings.analysis_attempts, metrics,
        settings.replica or "analysis",
    )  # fmt: skip
    enqueuer = Enqueuer(store, metrics, worker.woken)
    servicer = AnalysisServicer(store)

    def register(server: grpc.aio.Server) -> list[str]:
        analysis_pb2_grpc.add_AnalysisServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    event_log = kafka.event_log(settings)
    incarnation = Incarnation(settings.kafka_bootstrap, event_log) if event_log.embedded else None
    if incarnation is not None:
        app.closes(incarnation.close)

    def make_consumer() -> Any:  # aiokafka: untyped
        return kafka.consumer_of(
            settings,
            "analysis",
            (TABLE_EVENTS,),
            settings.replica or "analysis",
            incarnation,
            settings.consumer_share,
        )

    async def start() -> None:
        await migrate(engine, MIGRATIONS)
        stop = app.background.stop
        app.background.spawn(
            "consumer",
            kafka.keep_consuming(
                make_consumer,
                lambda c: consume(enqueuer, c, stop, metrics.lag, namespace),
                stop,
                "events",
            ),
        )
        app.background.spawn("worker", worker.run(stop))
        app.background.every("backlog", GAUGE_S, worker.gauge)

    app.register = register
    app.checks += [sql_check(engine)]
    app.on_start.append(start)
    return app
