"""Composition root of the wallet service: ledger, gRPC API, outbox relay, table-events consumer,
reconciler."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

import grpc

from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common import kafka, tracing
from services.common.balanced import table_channel
from services.common.deps import sql_check, sql_engine
from services.common.service import ServiceApp, base_app
from services.common.topics import TABLE_EVENTS, Namespace
from services.wallet.api import WalletServicer
from services.wallet.consumer import TableEventsHandler, consume
from services.wallet.ledger import Ledger, Outcome, check_invariants
from services.wallet.metrics import WalletMetrics
from services.wallet.migrate import migrate
from services.wallet.outbox import OutboxRelay
from services.wallet.reconciler import GrpcOutcomes, Reconciler
from services.wallet.settings import load_settings

SERVICE_NAME = wallet_pb2.DESCRIPTOR.services_by_name["WalletService"].full_name


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("wallet", settings)
    engine = sql_engine(settings.database_url)
    metrics = WalletMetrics(app.metrics)
    ledger = Ledger(engine, settings.fee_bps)
    ledger.on_operation = lambda outcome: _observe(metrics, outcome)
    replica = settings.replica or "wallet"
    namespace = Namespace(settings.kafka_namespace)
    relay = OutboxRelay(
        engine,
        lambda: kafka.producer(
            settings.kafka_bootstrap, settings.kafka_idempotence, f"{replica}-relay"
        ),
        metrics,
        settings.relay_interval_s,
        namespace=namespace,
    )
    handler = TableEventsHandler(ledger, metrics)
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    channels: list[grpc.aio.Channel] = []

    def register(server: grpc.aio.Server) -> list[str]:
        wallet_pb2_grpc.add_WalletServiceServicer_to_server(
            WalletServicer(
                ledger,
                metrics,
                settings.operator_token,
                settings.starter_grant,
                settings.store_secret,
            ),
            server,
        )
        return [SERVICE_NAME]

    async def start() -> None:
        await migrate(engine)
        metrics.escrowed.set(await ledger.open_escrow_total())
        metrics.invariant_ok.set(0 if await check_invariants(engine) else 1)
        tasks.append(asyncio.create_task(relay.run(stop), name="outbox-relay"))
        if settings.consume_table_events:

            def make_consumer() -> object:
                return kafka.consumer(
                    settings.kafka_bootstrap,
                    namespace.group("wallet"),
                    namespace.topic(TABLE_EVENTS),
                    client_id=replica,
                )

            keep = kafka.keep_consuming(
                make_consumer, lambda c: consume(handler, c, stop), stop, "table-events"
            )
            tasks.append(asyncio.create_task(keep, name="consumer"))
        tasks.append(asyncio.create_task(_audit(metrics, ledger, stop), name="audit"))
        interceptors = tracing.client_interceptors(app.tracer_provider)
        channels.append(table_channel(settings.table_addrs, interceptors))
        reconciler = Reconciler(
            ledger,
            GrpcOutcomes(channels[-1]),
            metrics,
            settings.escrow_bound_s,
            settings.reconcile_interval_s,
        )
        tasks.append(asyncio.create_task(reconciler.run(stop), name="reconciler"))

    async def close() -> None:
        stop.set()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5)
        await relay.close()
        for channel in channels:
            await channel.close(None)
        await engine.dispose()

    app.register = register
    app.checks.append(sql_check(engine))
    app.on_start.append(start)
    app.on_stop.append(close)
    return app


def _observe(metrics: WalletMetrics, outcome: Outcome) -> None:
    if outcome.kind == "settle":
        metrics.fees.inc(outcome.fees)
        metrics.settlements.labels("settled").inc()
    elif outcome.kind == "refund":
        metrics.settlements.labels("refunded").inc()


async def _audit(metrics: WalletMetrics, ledger: Ledger, stop: asyncio.Event) -> None:
    """Every few seconds: open escrow total and the ledger invariants, as gauges."""
    while not stop.is_set():
        with contextlib.suppress(Exception):
            metrics.escrowed.set(await ledger.open_escrow_total())
            metrics.invariant_ok.set(0 if await check_invariants(ledger.engine) else 1)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 5.0)
