"""Composition root of the wallet service: ledger, gRPC API, outbox relay, table-events consumer,
reconciler."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import grpc

from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common import event_log, tracing
from services.common.balanced import channel_to
from services.common.clock import now_ms
from services.common.connections import sql_check, sql_engine
from services.common.migrate import migrate
from services.common.service import ServiceApp, base_app
from services.contracts import peers
from services.contracts.topics import READERS, TABLE_EVENTS
from services.wallet.adapters.grpc_outcomes import GrpcOutcomes
from services.wallet.api import WalletServicer
from services.wallet.consumer import TableEventsHandler, consume
from services.wallet.ledger import Ledger, Outcome, check_invariants
from services.wallet.metrics import WalletMetrics
from services.wallet.outbox import OutboxRelay
from services.wallet.pools import Pools
from services.wallet.reconciler import Reconciler
from services.wallet.settings import load_settings

log = logging.getLogger("bg.wallet")
SERVICE_NAME = wallet_pb2.DESCRIPTOR.services_by_name["WalletService"].full_name
MIGRATIONS = Path(__file__).with_name("migrations")
AUDIT_S = 5.0  # the escrow and invariant gauges


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("wallet", settings)
    metrics = WalletMetrics(app.metrics)
    replica = settings.replica or "wallet"

    # The ledger on SQL, and its outbox relayed to Kafka.
    engine = sql_engine(settings.database_url)
    app.closes(engine.dispose)
    ledger = Ledger(
        engine,
        settings.fee_bps,
        on_operation=lambda outcome: _operated(outcome),
        on_batch=metrics.batch_size.observe,
    )
    # The event log: the outbox's way out and the table events' way in. On a broker that may
    # forget, where the rows went is confirmed by the groups' offsets; the topics' generations
    # are kept by the table service's keepers, on the store's clock (this service has none: a
    # keeper on a clock of its own that ran ahead would let go of generations still written).
    events = event_log.open_event_log(settings, READERS, settings.kafka_idempotence)
    app.closes(events.close)
    relay = OutboxRelay(
        engine, events.publisher(f"{replica}-relay"), metrics, settings.relay_interval_s
    )
    app.closes(relay.close)

    def _operated(outcome: Outcome) -> None:
        _observe(metrics, outcome)
        relay.wake()  # its rows leave at once; the relay's poll is for idle and other replicas

    # Settlements and refunds from the tables' events.
    handler = TableEventsHandler(ledger, metrics)

    def register(server: grpc.aio.Server) -> list[str]:
        servicer = WalletServicer(
            ledger,
            metrics,
            settings.operator_token,
            settings.starter_grant,
            settings.store_secret,
        )
        wallet_pb2_grpc.add_WalletServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    start_consumer = event_log.consume_in_background(
        app,
        settings,
        events,
        "wallet",
        (TABLE_EVENTS,),
        lambda reader, stop: consume(handler, reader, stop),
    )

    async def start() -> None:
        await migrate(engine, MIGRATIONS)
        await _audit(metrics, ledger)  # gauges set before start completes (then every AUDIT_S)
        background = app.background
        background.spawn("outbox-relay", relay.run(background.stop))
        if settings.consume_table_events:
            start_consumer()
        # The gauges, at once and then every AUDIT_S.
        background.every("audit", AUDIT_S, lambda: _audit(metrics, ledger))
        # Escrows past their bound, settled from the table's outcome (grpc.aio channels need the
        # running loop: made here).
        tables = app.channel(
            channel_to(
                peers.TABLE,
                settings.table_addrs,
                tracing.client_interceptors(app.tracer_provider),
            )
        )
        reconciler = Reconciler(
            ledger,
            GrpcOutcomes(tables),
            metrics,
            settings.escrow_bound_s,
            settings.reconcile_interval_s,
        )
        background.spawn("reconciler", reconciler.run(background.stop))

    app.register = register
    app.checks.append(sql_check(engine))
    app.on_start.append(start)
    return app


def _observe(metrics: WalletMetrics, outcome: Outcome) -> None:
    if outcome.kind == "settle":
        metrics.fees.inc(outcome.fees)
        metrics.settlements.labels("settled").inc()
    elif outcome.kind == "refund":
        metrics.settlements.labels("refunded").inc()


async def _audit(metrics: WalletMetrics, ledger: Ledger) -> None:
    """The open escrow total, the tournaments' pools and the ledger invariants, as gauges."""
    metrics.escrowed.set(await ledger.open_escrow_total())
    pooled, oldest = await Pools(ledger).unsettled()
    metrics.pooled.set(pooled)
    metrics.oldest_open_pool.set(0 if oldest is None else max(0.0, (now_ms() - oldest) / 1000))
    metrics.invariant_ok.set(0 if await check_invariants(ledger.engine) else 1)
