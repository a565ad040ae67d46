"""Settings of the bots worker (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import ServiceSettings, load, redis_url_setting, setting


@dataclass(frozen=True)
class BotsSettings(ServiceSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50055, "gRPC port (health only).", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9105, "Metrics HTTP port.", min=0, max=65535)
    redis_url: str = redis_url_setting()
    gateway_addr: str = setting(
        "BG_GATEWAY_ADDR", "127.0.0.1:50051", "Gateway the bots play through."
    )
    bots_secret: str = setting(
        "BG_BOTS_SECRET",
        "",
        "The service credential the bots sign in with, as computer seats only (the gateway's "
        "BG_BOTS_SECRET).",
        secret=True,
    )
    max_tables: int = setting("BG_BOTS_MAX_TABLES", 500, "Tables one worker plays at once.", min=1)


def load_settings(environ: Mapping[str, str] | None = None) -> BotsSettings:
    return load(BotsSettings, environ)
