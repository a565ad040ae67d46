"""Settings of the wallet service (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import (
    EventReaderSettings,
    database_url_setting,
    kafka_idempotence_setting,
    load,
    peer_setting,
    setting,
)
from services.contracts import peers


@dataclass(frozen=True)
class WalletSettings(EventReaderSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50053, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9103, "Metrics HTTP port.", min=0, max=65535)
    database_url: str = database_url_setting("sqlite+aiosqlite:///.data/wallet.db")
    kafka_idempotence: bool = kafka_idempotence_setting()
    operator_token: str = setting(
        "BG_WALLET_OPERATOR_TOKEN",
        "",
        "Token operators send (metadata x-operator-token) to deposit; empty disables deposits.",
        secret=True,
    )
    store_secret: str = setting(
        "BG_STORE_SECRET",
        "",
        "The secret the store signs purchase webhooks with (CreditPurchase; empty: no purchases).",
        secret=True,
    )
    starter_grant: int = setting(
        "BG_STARTER_GRANT",
        0,
        "Diamonds a new account is given once (0: none; `bgcluster up` sets a demo amount).",
        min=0,
    )
    fee_bps: int = setting(
        "BG_WALLET_FEE_BPS",
        800,
        "House fee per side in basis points (800 = 8%, I-11).",
        min=0,
        max=5000,
    )
    relay_interval_s: float = setting(
        "BG_WALLET_RELAY_INTERVAL_S",
        1.0,
        "Seconds between outbox relay polls when idle (an operation wakes the relay at once).",
        min=0.01,
    )
    consume_table_events: bool = setting(
        "BG_WALLET_CONSUME", True, "Consume table-events to settle/refund ended matches."
    )
    table_addrs: tuple[str, ...] = peer_setting(peers.TABLE)  # the reconciler asks about escrows
    escrow_bound_s: float = setting(
        "BG_WALLET_ESCROW_BOUND_S",
        600.0,
        "An escrow open this long is checked with its table (settled, refunded or left playing).",
        min=1,
    )
    reconcile_interval_s: float = setting(
        "BG_WALLET_RECONCILE_INTERVAL_S", 30.0, "Seconds between reconciler passes.", min=0.1
    )


def load_settings(environ: Mapping[str, str] | None = None) -> WalletSettings:
    return load(WalletSettings, environ)
