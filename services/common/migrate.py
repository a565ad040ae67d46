"""Bring a service's database to its newest schema with Alembic (run at service start).

Replicas of a service start together: on PostgreSQL the first to arrive takes a transaction-scoped
advisory lock and migrates, the others wait for its commit and then find the schema at head (DDL
is transactional there). SQLite is one process's database.

Alembic's own lines (one per migration, each with its whole docstring) are kept below INFO by
services/common/logs.py; the upgrade is logged here once, from which revision to which.
"""

from __future__ import annotations

import logging
import zlib
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger("bg.migrate")


async def migrate(engine: AsyncEngine, migrations: Path) -> None:
    def upgrade(connection: Connection) -> tuple[str | None, str | None]:
        before = MigrationContext.configure(connection).get_current_revision()
        cfg = Config()
        cfg.set_main_option("script_location", str(migrations))
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")
        return before, MigrationContext.configure(connection).get_current_revision()

    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            key = zlib.crc32(f"bg-migrate:{migrations.parent.name}".encode())
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
        before, after = await conn.run_sync(upgrade)
    if before != after:
        log.info(
            "database schema upgraded",
            extra={"schema": migrations.parent.name, "from": before or "empty", "to": after},
        )
