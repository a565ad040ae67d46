"""The archive of finished matches (every move), kept for players.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "matches",
        sa.Column("match_id", sa.String(200), primary_key=True),
        sa.Column("table_id", sa.String(100), nullable=False),
        sa.Column("ended_ms", sa.BigInteger, nullable=False),
        sa.Column("event", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "match_players",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("match_id", sa.String(200), primary_key=True),
        sa.Column("ended_ms", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_match_players_recent", "match_players", ["player_id", "ended_ms"])


def downgrade() -> None:
    op.drop_table("match_players")
    op.drop_table("matches")
