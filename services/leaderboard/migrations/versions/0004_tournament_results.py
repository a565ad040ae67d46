"""Finished tournaments' results (issue 29, from tournament-events): the archive keeps each one
with its players' ranks, so the tournament board is rebuilt and replayed like the others.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tournament_results",
        sa.Column("tournament_id", sa.String(200), primary_key=True),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("event", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "tournament_result_players",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("tournament_id", sa.String(200), primary_key=True),
        sa.Column("rank", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("tournament_result_players")
    op.drop_table("tournament_results")
