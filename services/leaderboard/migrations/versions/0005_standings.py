"""What a player sees of their standing (issue 60): each applied event's change on a board by the
match it belongs to (the end panel's "what this match changed", the rating's course), and each
archived match's profile and result per player (their record), filled in for the matches archived
before.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

from services.leaderboard.effects import outcome
from services.leaderboard.schema import match_players, matches

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("match_players", sa.Column("profile", sa.String(16), nullable=True))
    op.add_column("match_players", sa.Column("won", sa.Integer, nullable=True))
    op.create_table(
        "standing_changes",
        sa.Column("event_id", sa.String(200), primary_key=True),
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("board", sa.String(16), primary_key=True),
        sa.Column("key", sa.String(32), primary_key=True),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("value_before", sa.Float, nullable=False),
        sa.Column("value_after", sa.Float, nullable=False),
    )
    op.create_index("ix_standing_changes_source", "standing_changes", ["source", "player_id"])
    op.create_index(
        "ix_standing_changes_course", "standing_changes", ["player_id", "board", "at_ms"]
    )
    _fill_records()


def _fill_records() -> None:
    """The archived matches' results, read from their end events."""
    from bg.events.v1 import events_pb2

    conn = op.get_bind()
    for row in conn.execute(sa.select(matches.c.match_id, matches.c.event)).all():
        profile, results = outcome(events_pb2.TableEvent.FromString(bytes(row.event)))
        for player, won in results.items():
            conn.execute(
                sa.update(match_players)
                .where(match_players.c.match_id == row.match_id)
                .where(match_players.c.player_id == player)
                .values(profile=profile, won=None if won is None else int(won))
            )


def downgrade() -> None:
    op.drop_table("standing_changes")
    op.drop_column("match_players", "won")
    op.drop_column("match_players", "profile")
