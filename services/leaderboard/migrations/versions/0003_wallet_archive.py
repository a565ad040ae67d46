"""The archive keeps the wallet events applied too (league diamonds), so the boards can be
rebuilt and a player's events replayed from the leaderboard's own record, not from topics
whose history is bounded.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wallet_events",
        sa.Column("event_id", sa.String(200), primary_key=True),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("event", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "wallet_event_players",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("event_id", sa.String(200), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("wallet_event_players")
    op.drop_table("wallet_events")
