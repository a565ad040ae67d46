"""The analysis service's records (SQLAlchemy Core): one row per finished match, which is the
queue while it waits and the analysis once done, and each player's error rate per match."""

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

QUEUED, DONE, FAILED = "queued", "done", "failed"

# A match is inserted once (its id the key: a redelivered end event changes nothing), claimed by
# a worker for a lease, and finished in one transaction with its players' rows: a worker killed
# mid-match leaves it queued, its lease runs out (or its replica, started again, lets it go),
# another takes it; nothing is stored twice.
analyses = Table(
    "analyses",
    metadata,
    Column("match_id", String(200), primary_key=True),
    Column("table_id", String(100), nullable=False),
    Column("profile", String(16), nullable=False),
    Column("ended_ms", BigInteger, nullable=False),
    Column("queued_ms", BigInteger, nullable=False),
    Column("state", String(8), nullable=False),  # queued | done | failed
    Column("claimed_until_ms", BigInteger, nullable=False),  # 0: free to take
    Column("claimed_by", String(100), nullable=False),  # the replica holding the lease
    Column("attempts", Integer, nullable=False),
    Column("event", LargeBinary, nullable=True),  # the end event while queued; dropped once done
    Column("analysed_ms", BigInteger, nullable=False),
    Column("result", LargeBinary, nullable=True),  # bg.analysis.v1.MatchAnalysis once done
    Index("ix_analyses_queue", "state", "queued_ms"),
)

player_errors = Table(
    "player_errors",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("match_id", String(200), primary_key=True),
    Column("ended_ms", BigInteger, nullable=False),
    Column("profile", String(16), nullable=False),
    Column("decisions", Integer, nullable=False),
    Column("lost", Float, nullable=False),  # points of equity lost over those decisions
    Index("ix_player_errors_recent", "player_id", "ended_ms"),
)
