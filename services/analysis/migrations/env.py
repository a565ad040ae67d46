"""Alembic environment of the analysis service: services/common/migrate.py runs it at start."""

from services.analysis.schema import metadata
from services.common.migrate import run_environment

run_environment(metadata)
