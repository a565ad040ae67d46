"""Player accounts: players, devices, refresh tokens.

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
        "players",
        sa.Column("player_id", sa.String(40), primary_key=True),
        sa.Column("display_name", sa.String(40), nullable=False),
        sa.Column("name_key", sa.String(40), nullable=True, unique=True),
        sa.Column("name_changed_ms", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("email", sa.String(254), nullable=True, unique=True),
        sa.Column("password_hash", sa.String(200), nullable=True),
        sa.Column("failed_logins", sa.Integer, nullable=False, server_default="0"),
        sa.Column("locked_until_ms", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("deleted_ms", sa.BigInteger, nullable=True),
    )
    op.create_table(
        "devices",
        sa.Column("device_hash", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(40), nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_devices_player", "devices", ["player_id"])
    op.create_table(
        "refresh_tokens",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("family", sa.String(32), nullable=False),
        sa.Column("player_id", sa.String(40), nullable=False),
        sa.Column("expires_ms", sa.BigInteger, nullable=False),
        sa.Column("used_ms", sa.BigInteger, nullable=True),
        sa.Column("revoked_ms", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_refresh_family", "refresh_tokens", ["family"])
    op.create_index("ix_refresh_player", "refresh_tokens", ["player_id"])


def downgrade() -> None:
    op.drop_table("refresh_tokens")
    op.drop_table("devices")
    op.drop_table("players")
