"""Composition root of the bots worker."""

from __future__ import annotations

from collections.abc import Mapping

from services.bots.settings import load_settings
from services.bots.worker import BotWorker
from services.common.connections import redis_check, redis_client
from services.common.service import ServiceApp, base_app


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("bots", settings)
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
        timeout=settings.redis_timeout_s,
    )
    app.closes(redis.aclose)

    async def start() -> None:
        if not settings.bots_secret:
            raise RuntimeError("BG_BOTS_SECRET is required: bots sign in through the gateway")
        worker = BotWorker(redis, settings.gateway_addr, settings.bots_secret, settings.max_tables)
        app.background.spawn("bots", worker.run(app.background.stop))

    app.checks.append(redis_check(redis))
    app.on_start.append(start)
    return app
