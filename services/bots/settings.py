"""Settings of the bots worker (environment variables, see README)."""

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
    token_secret: str = setting(
        "BG_TOKEN_SECRET",
        "",
        "The gateway's token secret: bots sign in as their CPU seat.",
        secret=True,
    )
    token_keys: str = setting(
        "BG_TOKEN_KEYS",
        "",
        "Token keys for rotation, kid=secret pairs separated by commas: the first signs, all "
        "verify (empty: BG_TOKEN_SECRET alone).",
        secret=True,
    )
    max_tables: int = setting("BG_BOTS_MAX_TABLES", 500, "Tables one worker plays at once.", min=1)


def load_settings(environ: Mapping[str, str] | None = None) -> BotsSettings:
    return load(BotsSettings, environ)
