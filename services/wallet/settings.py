"""Settings of the wallet service (environment variables, see README)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import ServiceSettings, database_url_setting, load, setting


@dataclass(frozen=True)
class WalletSettings(ServiceSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50053, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9103, "Metrics HTTP port.", min=0, max=65535)
    database_url: str = database_url_setting("sqlite+aiosqlite:///.data/wallet.db")


def load_settings(environ: Mapping[str, str] | None = None) -> WalletSettings:
    return load(WalletSettings, environ)
