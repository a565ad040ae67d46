"""The ledger: accounts, operations, transfers, escrows, outbox.

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
        "accounts",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("balance", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.CheckConstraint("kind = 'external' OR balance >= 0", name="ck_accounts_no_overdraft"),
    )
    op.create_table(
        "operations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("idem_key", sa.String(200), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("response", sa.Text, nullable=False),
        sa.Column("match_id", sa.String(200), nullable=True),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "transfers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("operation_id", sa.Integer, sa.ForeignKey("operations.id"), nullable=False),
        sa.Column("debit", sa.String(200), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("credit", sa.String(200), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.CheckConstraint("amount > 0", name="ck_transfers_positive"),
    )
    op.create_index("ix_transfers_debit", "transfers", ["debit", "id"])
    op.create_index("ix_transfers_credit", "transfers", ["credit", "id"])
    op.create_table(
        "escrows",
        sa.Column("match_id", sa.String(200), primary_key=True),
        sa.Column("player_a", sa.String(200), nullable=False),
        sa.Column("player_b", sa.String(200), nullable=False),
        sa.Column("stake_a", sa.BigInteger, nullable=False),
        sa.Column("stake_b", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column(
            "closed_operation_id",
            sa.Integer,
            sa.ForeignKey("operations.id"),
            nullable=True,
            unique=True,
        ),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.CheckConstraint("status IN ('open', 'settled', 'refunded')", name="ck_escrows_status"),
    )
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("topic", sa.String(100), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column("published_ms", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_outbox_unpublished", "outbox", ["published_ms", "id"])


def downgrade() -> None:
    for table in ("outbox", "escrows", "transfers", "operations", "accounts"):
        op.drop_table(table)
