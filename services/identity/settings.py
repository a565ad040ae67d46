"""Settings of the identity service (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import ServiceSettings, database_url_setting, load, setting


@dataclass(frozen=True)
class IdentitySettings(ServiceSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50057, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9107, "Metrics HTTP port.", min=0, max=65535)
    database_url: str = database_url_setting("sqlite+aiosqlite:///.data/identity.db")
    refresh_ttl_s: int = setting(
        "BG_REFRESH_TTL_S", 30 * 86_400, "Seconds an account's refresh token stays valid.", min=300
    )
    refresh_keys: str = setting(
        "BG_REFRESH_KEYS",
        "",
        "Secrets a used refresh token's successor is derived from, separated by commas: the "
        "first derives, all are recognised (so a retry across a rotation still gets its "
        "session). Shared by identity replicas; empty: a random one, one replica alone.",
        secret=True,
    )


def load_settings(environ: Mapping[str, str] | None = None) -> IdentitySettings:
    return load(IdentitySettings, environ)
