"""Composition root of the identity service: accounts, bans and the audit log on its own SQL
database, migrated at start, served over gRPC to the gateway."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import grpc

from bg.identity.v1 import identity_pb2, identity_pb2_grpc
from services.common.deps import sql_check, sql_engine
from services.common.migrate import migrate
from services.common.service import ServiceApp, base_app
from services.identity.adapters.sql_accounts import Accounts, successor_keys
from services.identity.adapters.sql_audit import AuditLog
from services.identity.api import IdentityServicer
from services.identity.settings import load_settings

SERVICE_NAME = identity_pb2.DESCRIPTOR.services_by_name["IdentityService"].full_name
MIGRATIONS = Path(__file__).with_name("migrations")  # the accounts, bans and audit tables


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("identity", settings)
    engine = sql_engine(settings.database_url)
    app.closes(engine.dispose)
    keys = [k.strip() for k in settings.refresh_keys.split(",") if k.strip()]
    accounts = Accounts(engine, settings.refresh_ttl_s, successor_keys=successor_keys(keys))
    servicer = IdentityServicer(accounts, AuditLog(engine))

    def register(server: grpc.aio.Server) -> list[str]:
        identity_pb2_grpc.add_IdentityServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    async def start() -> None:
        await migrate(engine, MIGRATIONS)

    app.register = register
    app.checks.append(sql_check(engine))
    app.on_start.append(start)
    return app
