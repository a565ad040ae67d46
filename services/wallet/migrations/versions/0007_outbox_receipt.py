"""The outbox keeps the event log's receipt for a sent row (one opaque column, the log's own
words) instead of an embedded broker's placement in four (generation, partition, offset,
incarnation): the log port speaks receipts (issue 62, item 1).

Rows a log that keeps what it acknowledged published (Kafka: no placement kept) are confirmed
as of their publication, as that log's rows are now. Rows sent to the embedded broker and not
yet confirmed are sent again (consumers dedupe on the event's id): their placements are not
receipts, and that broker forgets on a restart anyway.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

PLACEMENT = ("sent_gen", "sent_partition", "sent_offset", "sent_incarnation")


def _outbox(sent: str) -> sa.TableClause:
    """The columns this migration reads and writes, `sent` the one that says a row was sent."""
    return sa.table(
        "outbox",
        sa.column("published_ms", sa.BigInteger),
        sa.column("confirmed_ms", sa.BigInteger),
        sa.column(sent, sa.String),
    )


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("sent_receipt", sa.String(128), nullable=True))
    outbox = _outbox("sent_incarnation")
    unconfirmed = outbox.c.published_ms.is_not(None) & outbox.c.confirmed_ms.is_(None)
    op.execute(
        outbox.update()
        .where(unconfirmed & outbox.c.sent_incarnation.is_(None))
        .values(confirmed_ms=outbox.c.published_ms)
    )
    op.execute(
        outbox.update()
        .where(unconfirmed & outbox.c.sent_incarnation.is_not(None))
        .values(published_ms=None)
    )
    with op.batch_alter_table("outbox") as batch:
        for name in PLACEMENT:
            batch.drop_column(name)


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("sent_gen", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("sent_partition", sa.Integer, nullable=True))
        batch.add_column(sa.Column("sent_offset", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("sent_incarnation", sa.String(32), nullable=True))
    outbox = _outbox("sent_receipt")
    # Unconfirmed rows go again (their receipts are no placements): consumers dedupe.
    op.execute(
        outbox.update()
        .where(outbox.c.confirmed_ms.is_(None) & outbox.c.sent_receipt.is_not(None))
        .values(published_ms=None)
    )
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("sent_receipt")
