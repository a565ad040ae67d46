"""Composition root of the gateway service: wires real adapters into the host."""

from __future__ import annotations

from collections.abc import Mapping

from services.common.deps import redis_check, redis_client
from services.common.service import ServiceApp, base_app
from services.gateway.settings import load_settings


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("gateway", settings)
    redis = redis_client(settings.redis_url)
    app.checks.append(redis_check(redis))
    app.on_stop.append(redis.aclose)
    return app
