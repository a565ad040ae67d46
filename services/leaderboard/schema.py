"""The leaderboard's durable records (SQLAlchemy Core); Redis sorted sets are derived from them."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Float, Integer, MetaData, String, Table

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
