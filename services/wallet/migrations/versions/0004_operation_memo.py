"""Operations keep a memo: an operator's adjustment says who made it and why.

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
    op.add_column("operations", sa.Column("memo", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("operations", "memo")
