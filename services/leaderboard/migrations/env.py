"""Alembic environment: runs on the connection the service hands it."""

from alembic import context

from services.leaderboard.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
