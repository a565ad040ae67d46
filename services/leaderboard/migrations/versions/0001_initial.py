"""Processed events, scores by board, ratings.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "processed_events",
        sa.Column("event_id", sa.String(200), primary_key=True),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "scores",
        sa.Column("board", sa.String(16), primary_key=True),
        sa.Column("key", sa.String(32), primary_key=True),
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("value", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "ratings",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("rating", sa.Float, nullable=False),
        sa.Column("experience", sa.Integer, nullable=False),
        sa.Column("matches", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    for table in ("ratings", "scores", "processed_events"):
        op.drop_table(table)
