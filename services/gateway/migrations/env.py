"""Alembic environment of the gateway's accounts: services/common/migrate.py runs it at start."""

from services.common.migrate import run_environment
from services.gateway.account_schema import metadata

run_environment(metadata)
