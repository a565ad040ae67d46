"""Players restricted to casual unrated play by an operator's fair-play decision (issue 61).

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
    op.create_table(
        "restrictions",
        sa.Column("player_id", sa.String(64), primary_key=True),
        sa.Column("restricted_ms", sa.BigInteger, nullable=False),
        sa.Column("operator", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("restrictions")
