"""Alembic environment of the leaderboard: services/common/migrate.py runs it at start."""

from services.common.migrate import run_environment
from services.leaderboard.schema import metadata

run_environment(metadata)
