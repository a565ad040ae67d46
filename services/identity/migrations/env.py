"""Alembic environment of the identity service's accounts, bans and audit log (once the
gateway's: the version table keeps its name, so an existing database carries over):
services/common/migrate.py runs it at start."""

from services.common.migrate import run_environment
from services.identity.schema import metadata

run_environment(metadata)
