"""Fair play (issue 61): each player's evidence per match, the test's value, the flags.

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
        "fair_play_matches",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("match_id", sa.String(200), primary_key=True),
        sa.Column("ended_ms", sa.BigInteger, nullable=False),
        sa.Column("profile", sa.String(16), nullable=False),
        sa.Column("decisions", sa.Integer, nullable=False),
        sa.Column("close", sa.Integer, nullable=False),
        sa.Column("close_best", sa.Integer, nullable=False),
        sa.Column("clear", sa.Integer, nullable=False),
        sa.Column("clear_best", sa.Integer, nullable=False),
        sa.Column("checker_lost", sa.Float, nullable=False),
        sa.Column("cube_decisions", sa.Integer, nullable=False),
        sa.Column("cube_lost", sa.Float, nullable=False),
        sa.Column("close_think_ms", sa.BigInteger, nullable=False),
        sa.Column("clear_think_ms", sa.BigInteger, nullable=False),
        sa.Column("choice", sa.Float, nullable=False),
        sa.Column("timing", sa.Float, nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("statistic", sa.Float, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    op.create_index("ix_fair_play_matches_order", "fair_play_matches", ["player_id", "seq"])
    op.create_table(
        "fair_play_players",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("statistic", sa.Float, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("run_seq", sa.Integer, nullable=False),
        sa.Column("open_flag", sa.Integer, nullable=False),
    )
    op.create_table(
        "fair_play_flags",
        sa.Column("flag_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("player_id", sa.String(100), nullable=False),
        sa.Column("flagged_ms", sa.BigInteger, nullable=False),
        sa.Column("statistic", sa.Float, nullable=False),
        sa.Column("threshold", sa.Float, nullable=False),
        sa.Column("first_seq", sa.Integer, nullable=False),
        sa.Column("last_seq", sa.Integer, nullable=False),
        sa.Column("state", sa.String(12), nullable=False),
        sa.Column("decided_by", sa.String(64), nullable=False),
        sa.Column("reason", sa.String(200), nullable=False),
        sa.Column("decided_ms", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_fair_play_flags_state", "fair_play_flags", ["state", "flag_id"])


def downgrade() -> None:
    op.drop_table("fair_play_flags")
    op.drop_table("fair_play_players")
    op.drop_table("fair_play_matches")
