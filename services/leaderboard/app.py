"""Composition root of the leaderboard service: wires real adapters into the host."""

from __future__ import annotations

from collections.abc import Mapping

from services.common.deps import redis_check, redis_client, sql_check, sql_engine
from services.common.service import ServiceApp, base_app
from services.leaderboard.settings import load_settings


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("leaderboard", settings)
    engine = sql_engine(settings.database_url)
    redis = redis_client(settings.redis_url)
    app.checks += [sql_check(engine), redis_check(redis)]
    app.on_stop += [engine.dispose, redis.aclose]
    return app
