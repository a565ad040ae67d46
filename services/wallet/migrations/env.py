"""Alembic environment: runs on the connection the wallet hands it (see migrate.py)."""

from alembic import context

from services.wallet.schema import metadata

connection = context.config.attributes["connection"]
# Its own version table (services/common/migrate.py names it): a database shared with other
# services (k8s) keeps each one's apart.
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    version_table=context.config.attributes["version_table"],
)
with context.begin_transaction():
    context.run_migrations()
