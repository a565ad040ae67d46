"""Composition root of the wallet service: wires real adapters into the host."""

from __future__ import annotations

from collections.abc import Mapping

from services.common.deps import sql_check, sql_engine
from services.common.service import ServiceApp, base_app
from services.wallet.settings import load_settings


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("wallet", settings)
    engine = sql_engine(settings.database_url)
    app.checks.append(sql_check(engine))
    app.on_stop.append(engine.dispose)
    return app
