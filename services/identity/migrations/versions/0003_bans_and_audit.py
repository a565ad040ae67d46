"""Bans and the admin audit log.

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
        "bans",
        sa.Column("player_id", sa.String(64), primary_key=True),
        sa.Column("banned_ms", sa.BigInteger, nullable=False),
        sa.Column("operator", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
    )
    op.create_table(
        "admin_audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("operator", sa.String(64), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("target", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("outcome", sa.String(64), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_index("ix_admin_audit_target", "admin_audit", ["target", "id"])


def downgrade() -> None:
    op.drop_index("ix_admin_audit_target", "admin_audit")
    op.drop_table("admin_audit")
    op.drop_table("bans")
