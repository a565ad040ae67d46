"""Schema upgrades at service start (services/common/migrate.py): one log line saying from which
revision to which, and nothing when the schema is at head already (issue 27, item 12: a new
user's `make up` showed every migration's docstring at every start). Every service keeps its
revision in a table of its own, so all of them migrate one shared database (k8s), and a
database of the earlier release (`alembic_version`) is adopted, not migrated again."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from services.analysis.app import MIGRATIONS as ANALYSIS
from services.common.connections import sql_engine
from services.common.logs import configure
from services.common.migrate import migrate
from services.identity.app import MIGRATIONS as ACCOUNTS
from services.leaderboard.app import MIGRATIONS as LEADERBOARD
from services.wallet.app import MIGRATIONS


async def test_an_upgrade_is_one_line_and_a_schema_at_head_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = logging.getLogger()
    kept = (root.level, root.handlers[:])
    configure("wallet", "INFO", "text")  # as a service starts (it replaces the root's handlers)
    root.addHandler(caplog.handler)
    assert logging.getLogger("alembic").getEffectiveLevel() >= logging.WARNING
    engine = sql_engine(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}")
    try:
        with caplog.at_level(logging.INFO):
            await migrate(engine, MIGRATIONS)
            upgraded = [r for r in caplog.records if r.name == "bg.migrate"]
            assert [(r.getMessage(), getattr(r, "from")) for r in upgraded] == [
                ("database schema upgraded", "empty")
            ]
            caplog.clear()
            await migrate(engine, MIGRATIONS)
            assert [r for r in caplog.records if r.name.startswith(("bg.migrate", "alembic"))] == []
        async with engine.connect() as conn:
            head = (
                await conn.execute(text("SELECT version_num FROM alembic_version_wallet"))
            ).scalar()
        assert head == upgraded[0].to  # type: ignore[attr-defined]
    finally:
        await engine.dispose()
        root.setLevel(kept[0])
        root.handlers[:] = kept[1]
        for noisy in ("aiokafka", "kafka", "asyncio", "websockets", "alembic"):
            logging.getLogger(noisy).setLevel(logging.NOTSET)


async def _versions(engine: Any) -> dict[str, str]:
    async with engine.connect() as conn:
        names = await conn.run_sync(lambda c: inspect(c).get_table_names())
        return {
            n: (await conn.execute(text(f"SELECT version_num FROM {n}"))).scalar_one()
            for n in names
            if n.startswith("alembic_version")
        }


async def test_every_service_migrates_one_shared_database(tmp_path: Path) -> None:
    """k8s gives the services one database: each keeps its own revision (the wallet's and the
    leaderboard's shared `alembic_version` before, each the other's unknown)."""
    engine = sql_engine(f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}")
    try:
        for folder in (MIGRATIONS, LEADERBOARD, ACCOUNTS, ANALYSIS):
            await migrate(engine, folder)
        for folder in (MIGRATIONS, LEADERBOARD, ACCOUNTS, ANALYSIS):
            await migrate(engine, folder)  # a restart: at head, nothing to do
        versions = await _versions(engine)
        assert set(versions) == {
            "alembic_version_wallet", "alembic_version_leaderboard",
            "alembic_version_accounts", "alembic_version_analysis",
        }  # fmt: skip
        assert versions["alembic_version_wallet"] == "0007"
        assert versions["alembic_version_leaderboard"] == "0005"
    finally:
        await engine.dispose()


async def test_a_database_of_the_earlier_release_is_adopted_then_upgraded(tmp_path: Path) -> None:
    engine = sql_engine(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
    try:
        await migrate(engine, MIGRATIONS)
        async with engine.begin() as conn:  # as the earlier release left it
            await conn.execute(text("ALTER TABLE alembic_version_wallet RENAME TO alembic_version"))
        await migrate(engine, MIGRATIONS)  # no table is made twice: the revision is adopted
        versions = await _versions(engine)
        assert versions["alembic_version_wallet"] == "0007"
    finally:
        await engine.dispose()
