"""Bring a service's database to its newest schema with Alembic (run at service start)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine


async def migrate(engine: AsyncEngine, migrations: Path) -> None:
    def upgrade(connection: Connection) -> None:
        cfg = Config()
        cfg.set_main_option("script_location", str(migrations))
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")

    async with engine.begin() as conn:
        await conn.run_sync(upgrade)
