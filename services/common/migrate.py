"""Bring a service's database to its newest schema with Alembic (run at service start).

Replicas of a service start together: on PostgreSQL the first to arrive takes a transaction-scoped
advisory lock and migrates, the others wait for its commit and then find the schema at head (DDL
is transactional there). SQLite is one process's database.

Each service keeps its revision in a version table of its own (`version_table`): in k8s the
services share one database, where Alembic's default `alembic_version` held the wallet's and the
leaderboard's revisions in one row, each the other's unknown. A database of an earlier release
(its revision in `alembic_version`, one of this service's) is adopted once, then upgraded.

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
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, MetaData, inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger("bg.migrate")


def run_environment(metadata: MetaData) -> None:
    """The body of every service's `migrations/env.py`: Alembic on the connection `migrate`
    hands it, with the service's own version table (a database shared with other services, as
    in k8s, keeps each one's apart)."""
    from alembic import context

    context.configure(
        connection=context.config.attributes["connection"],
        target_metadata=metadata,
        render_as_batch=True,
        version_table=context.config.attributes["version_table"],
    )
    with context.begin_transaction():
        context.run_migrations()


LEGACY = "alembic_version"  # where every service but the gateway kept its revision before
NAMED = "version_table.txt"  # in a `migrations/` folder whose table was named before this rule


def version_table(migrations: Path) -> str:
    """The version table of the service whose `migrations/` folder this is: its own name for
    it (NAMED), else `alembic_version_<service>`."""
    named = migrations / NAMED
    if named.exists():
        return named.read_text().strip()
    return f"alembic_version_{migrations.parent.name}"


def _adopt_legacy(connection: Connection, cfg: Config, table: str) -> None:
    """A database from before version tables were per service: its revision moves to `table`
    when it is one of this service's (another service's, in a shared database, is left)."""
    found = inspect(connection)
    if found.has_table(table) or not found.has_table(LEGACY):
        return
    legacy = list(connection.execute(text(f"SELECT version_num FROM {LEGACY}")).scalars())
    ours = {s.revision for s in ScriptDirectory.from_config(cfg).walk_revisions()}
    if len(legacy) == 1 and legacy[0] in ours:
        command.stamp(cfg, legacy[0])
        log.info("schema revision adopted", extra={"table": table, "revision": legacy[0]})


async def migrate(engine: AsyncEngine, migrations: Path, revision: str = "head") -> None:
    """Upgrade to `revision` (the head; an earlier one for tests of an upgrade)."""
    table = version_table(migrations)

    def current(connection: Connection) -> str | None:
        context = MigrationContext.configure(connection, opts={"version_table": table})
        return context.get_current_revision()

    def upgrade(connection: Connection) -> tuple[str | None, str | None]:
        cfg = Config()
        cfg.set_main_option("script_location", str(migrations))
        cfg.attributes["connection"] = connection
        cfg.attributes["version_table"] = table
        _adopt_legacy(connection, cfg, table)
        before = current(connection)
        command.upgrade(cfg, revision)
        return before, current(connection)

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
