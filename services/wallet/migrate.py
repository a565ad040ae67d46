"""The wallet's migrations (services/wallet/migrations/), applied at start."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from services.common import migrate as common

MIGRATIONS = Path(__file__).with_name("migrations")


async def migrate(engine: AsyncEngine) -> None:
    await common.migrate(engine, MIGRATIONS)
