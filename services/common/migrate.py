"""Bring a service's database to its newest schema with Alembic (run at service start).

Replicas of a service start together: on PostgreSQL the first to arrive takes a transaction-scoped
advisory lock and migrates, the others wait for its commit and then find the schema at head (DDL
is transactional there). SQLite is one process's database.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine


async def migrate(engine: AsyncEngine, migrations: Path) -> None:
    def upgrade(connection: Connection) -> None:
        cfg = Config()
        cfg.set_main_option("script_location", str(migrations))
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")

    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            key = zlib.crc32(f"bg-migrate:{migrations.parent.name}".encode())
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
        await conn.run_sync(upgrade)
