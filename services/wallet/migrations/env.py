"""Alembic environment: runs on the connection the wallet hands it (see migrate.py)."""

from alembic import context

from services.wallet.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
