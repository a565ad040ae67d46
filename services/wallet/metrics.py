"""The wallet's own metrics (beside the shared RPC metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from services.common.metrics import ServiceMetrics


class WalletMetrics:
    def __init__(self, base: ServiceMetrics) -> None:
        r = base.registry
        self.operations = Counter(
            "bg_wallet_operations_total",
            "Ledger operations by kind and outcome.",
            ["kind", "outcome"],
            registry=r,
        )
        self.batch_size = Histogram(
            "bg_wallet_batch_operations",
            "Operations committed together in one ledger transaction (group commit).",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=r,
        )
        self.escrowed = Gauge(
            "bg_wallet_escrowed_diamonds", "Diamonds held in open escrows.", registry=r
        )
        self.fees = Counter(
            "bg_wallet_fees_diamonds_total", "House fees taken at settlement.", registry=r
        )
        self.settlements = Counter(
            "bg_wallet_match_closings_total",
            "Escrows closed, by settled or refunded.",
            ["how"],
            registry=r,
        )
        self.outbox_backlog = Gauge(
            "bg_wallet_outbox_backlog", "Outbox events not yet on Kafka.", registry=r
        )
        self.outbox_oldest_age = Gauge(
            "bg_wallet_outbox_oldest_age_seconds",
            "Age of the oldest unpublished outbox event.",
            registry=r,
        )
        self.published = Counter(
            "bg_wallet_outbox_published_total", "Outbox events published.", registry=r
        )
        self.consumed = Counter(
            "bg_wallet_table_events_total",
            "table-events consumed, by type and result.",
            ["type", "result"],
            registry=r,
        )
        self.invariant_ok = Gauge(
            "bg_wallet_invariant_ok",
            "1 when the last ledger invariant check passed, else 0.",
            registry=r,
        )
        self.escrows_stuck = Gauge(
            "bg_wallet_escrows_stuck",
            "Escrows open past the reconcile bound that the last pass could neither close nor "
            "confirm as still playing (alert).",
            registry=r,
        )
        self.pooled = Gauge(
            "bg_wallet_pooled_diamonds",
            "Diamonds in tournaments' pools still open or running (buy-ins held or captured).",
            registry=r,
        )
        self.oldest_open_pool = Gauge(
            "bg_wallet_oldest_open_pool_seconds",
            "Age of the oldest tournament pool not yet paid or refunded (0: none).",
            registry=r,
        )
        self.oldest_open_escrow = Gauge(
            "bg_wallet_oldest_open_escrow_seconds",
            "Age of the oldest escrow open past the reconcile bound (0: none).",
            registry=r,
        )
        self.reconciled = Counter(
            "bg_wallet_reconciled_total",
            "Escrows the reconciler looked at, by what it did.",
            ["action"],
            registry=r,
        )
