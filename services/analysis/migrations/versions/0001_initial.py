"""The analyses (queue and results) and each player's error rate per match.

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
        "analyses",
        sa.Column("match_id", sa.String(200), primary_key=True),
        sa.Column("table_id", sa.String(100), nullable=False),
        sa.Column("profile", sa.String(16), nullable=False),
        sa.Column("ended_ms", sa.BigInteger, nullable=False),
        sa.Column("queued_ms", sa.BigInteger, nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("claimed_until_ms", sa.BigInteger, nullable=False),
        sa.Column("claimed_by", sa.String(100), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("event", sa.LargeBinary, nullable=True),
        sa.Column("analysed_ms", sa.BigInteger, nullable=False),
        sa.Column("result", sa.LargeBinary, nullable=True),
    )
    op.create_index("ix_analyses_queue", "analyses", ["state", "queued_ms"])
    op.create_table(
        "player_errors",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("match_id", sa.String(200), primary_key=True),
        sa.Column("ended_ms", sa.BigInteger, nullable=False),
        sa.Column("profile", sa.String(16), nullable=False),
        sa.Column("decisions", sa.Integer, nullable=False),
        sa.Column("lost", sa.Float, nullable=False),
    )
    op.create_index("ix_player_errors_recent", "player_errors", ["player_id", "ended_ms"])


def downgrade() -> None:
    op.drop_table("player_errors")
    op.drop_table("analyses")
