"""Tournaments' prize pools: a `pools` table, and holds of purpose 'buyin' (a buy-in held at
registration, captured into the pool at the start or released).

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

PURPOSES = "purpose IN ('raise', 'boost', 'buyin')"
EARLIER_PURPOSES = "purpose IN ('raise', 'boost')"


def upgrade() -> None:
    op.create_table(
        "pools",
        sa.Column("tournament_id", sa.String(200), primary_key=True),
        sa.Column("buy_in", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("entrants", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_ms", sa.BigInteger, nullable=False),
        sa.Column(
            "closed_operation_id",
            sa.Integer,
            sa.ForeignKey("operations.id"),
            nullable=True,
            unique=True,
        ),
        sa.CheckConstraint(
            "status IN ('open', 'running', 'paid', 'refunded')", name="ck_pools_status"
        ),
    )
    # SQLite alters a CHECK only by copying the table (batch mode); PostgreSQL in place.
    with op.batch_alter_table("holds") as batch:
        batch.drop_constraint("ck_holds_purpose", type_="check")
        batch.create_check_constraint("ck_holds_purpose", PURPOSES)


def downgrade() -> None:
    with op.batch_alter_table("holds") as batch:
        batch.drop_constraint("ck_holds_purpose", type_="check")
        batch.create_check_constraint("ck_holds_purpose", EARLIER_PURPOSES)
    op.drop_table("pools")
