"""Schema upgrades at service start (services/common/migrate.py): one log line saying from which
revision to which, and nothing when the schema is at head already (issue 27, item 12: a new
user's `make up` showed every migration's docstring at every start)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import text

from services.common.deps import sql_engine
from services.common.logs import configure
from services.common.migrate import migrate
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
            head = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        assert head == upgraded[0].to  # type: ignore[attr-defined]
    finally:
        await engine.dispose()
        root.setLevel(kept[0])
        root.handlers[:] = kept[1]
        for noisy in ("aiokafka", "kafka", "asyncio", "websockets", "alembic"):
            logging.getLogger(noisy).setLevel(logging.NOTSET)
