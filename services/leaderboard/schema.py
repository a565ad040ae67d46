"""The leaderboard's durable records (SQLAlchemy Core); Redis sorted sets are derived from them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
)

metadata = MetaData()

# Every event applied, by its id: redelivery and replays never count twice.
processed = Table(
    "processed_events",
    metadata,
    Column("event_id", String(200), primary_key=True),
    Column("at_ms", BigInteger, nullable=False),
)

# board: trophies | league | scored; key: the season ("all" or a week) or the scored level.
scores = Table(
    "scores",
    metadata,
    Column("board", String(16), primary_key=True),
    Column("key", String(32), primary_key=True),
    Column("player_id", String(100), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

ratings = Table(
    "ratings",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("rating", Float, nullable=False),
    Column("experience", Integer, nullable=False),  # match points played (FIBS)
    Column("matches", Integer, nullable=False),
)

# The archive of finished matches, kept for players after their table's keys expired: one row per
# match (the `match_ended` / `match_closed` event with every move, as bytes), one row per player
# for listing.
matches = Table(
    "matches",
    metadata,
    Column("match_id", String(200), primary_key=True),
    Column("table_id", String(100), nullable=False),
    Column("ended_ms", BigInteger, nullable=False),
    Column("event", LargeBinary, nullable=False),  # bg.events.v1.TableEvent
)

match_players = Table(
    "match_players",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("match_id", String(200), primary_key=True),
    Column("ended_ms", BigInteger, nullable=False),
    # The player's record (0005): the match's profile, and 1 won, 0 lost, NULL closed undecided.
    Column("profile", String(16), nullable=True),
    Column("won", Integer, nullable=True),
    Index("ix_match_players_recent", "player_id", "ended_ms"),
)

# What each applied event changed for a player on a board (0005), by the match (or tournament)
# it belongs to: the end panel's "what this match changed" and the rating's course. Written in
# the event's own transaction, so a rebuild writes them again as it applies the archive.
standing_changes = Table(
    "standing_changes",
    metadata,
    Column("event_id", String(200), primary_key=True),
    Column("player_id", String(100), primary_key=True),
    Column("board", String(16), primary_key=True),
    Column("key", String(32), primary_key=True),
    Column("source", String(200), nullable=False),
    Column("at_ms", BigInteger, nullable=False),
    Column("value_before", Float, nullable=False),
    Column("value_after", Float, nullable=False),
    Index("ix_standing_changes_source", "source", "player_id"),
    Index("ix_standing_changes_course", "player_id", "board", "at_ms"),
)

# The wallet events applied (the league's diamonds), kept with the players they concern (0003):
# with the matches, the record the boards are rebuilt and replayed from.
wallet_events = Table(
    "wallet_events",
    metadata,
    Column("event_id", String(200), primary_key=True),
    Column("at_ms", BigInteger, nullable=False),
    Column("event", LargeBinary, nullable=False),  # bg.events.v1.WalletEvent
)

wallet_event_players = Table(
    "wallet_event_players",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("event_id", String(200), primary_key=True),
)

# Finished tournaments' results (0004, tournament-events), with each player's final rank: the
# record the tournament board is rebuilt and replayed from.
tournament_results = Table(
    "tournament_results",
    metadata,
    Column("tournament_id", String(200), primary_key=True),
    Column("at_ms", BigInteger, nullable=False),
    Column("event", LargeBinary, nullable=False),  # bg.events.v1.TournamentEvent
)

tournament_result_players = Table(
    "tournament_result_players",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("tournament_id", String(200), primary_key=True),
    Column("rank", Integer, nullable=False),
)
