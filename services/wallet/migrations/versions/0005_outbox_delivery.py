"""The outbox keeps where each row went on a broker that may forget (generation, partition,
offset, incarnation) and when every reading group had it (confirmed_ms): until then it is
kept, and sent again if the broker forgets it.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("sent_gen", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("sent_partition", sa.Integer, nullable=True))
        batch.add_column(sa.Column("sent_offset", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("sent_incarnation", sa.String(32), nullable=True))
        batch.add_column(sa.Column("confirmed_ms", sa.BigInteger, nullable=True))
    op.create_index("ix_outbox_unconfirmed", "outbox", ["confirmed_ms", "published_ms", "id"])


def downgrade() -> None:
    op.drop_index("ix_outbox_unconfirmed", "outbox")
    with op.batch_alter_table("outbox") as batch:
        for name in (
            "confirmed_ms",
            "sent_incarnation",
            "sent_offset",
            "sent_partition",
            "sent_gen",
        ):
            batch.drop_column(name)
