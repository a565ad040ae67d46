"""Escrows remember the bet they opened with: a raise to cube C holds bet x C/2 from each side,
whatever the stakes say while an earlier take's capture is still on its way.

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
    op.add_column("escrows", sa.Column("bet", sa.BigInteger, nullable=False, server_default="0"))
    # Escrows opened before this revision: their stake is the best record of the bet there is
    # (a double already taken on one of them is read by the ledger as the bet, as it was before).
    op.execute("UPDATE escrows SET bet = stake_a WHERE bet = 0")


def downgrade() -> None:
    op.drop_column("escrows", "bet")
