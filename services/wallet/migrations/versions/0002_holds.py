"""Holds: diamonds reserved for a double's raise or a boost until captured or released.

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
        "holds",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("hold_key", sa.String(200), nullable=False),
        sa.Column("match_id", sa.String(200), nullable=False),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("cube", sa.Integer, nullable=False, server_default="0"),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("closed_operation_id", sa.Integer, sa.ForeignKey("operations.id"), nullable=True),
        sa.UniqueConstraint("hold_key", "player_id", name="uq_holds_key_player"),
        sa.CheckConstraint("amount > 0", name="ck_holds_positive"),
        sa.CheckConstraint("purpose IN ('raise', 'boost')", name="ck_holds_purpose"),
        sa.CheckConstraint("status IN ('held', 'captured', 'released')", name="ck_holds_status"),
    )
    op.create_index("ix_holds_match", "holds", ["match_id", "status"])
    op.create_index("ix_escrows_open", "escrows", ["status", "created_ms"])


def downgrade() -> None:
    op.drop_index("ix_escrows_open", "escrows")
    op.drop_table("holds")
