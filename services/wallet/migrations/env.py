"""Alembic environment of the wallet: services/common/migrate.py runs it at start."""

from services.common.migrate import run_environment
from services.wallet.schema import metadata

run_environment(metadata)
