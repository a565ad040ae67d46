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

# Fair play (issue 61; services/analysis/fair_play.py). Per player per judged match its evidence
# and the test's value after it; per player the test's value now and where its run began (the
# first match since it last stood at 0); the flags and their review. Written in the transaction
# that stores the match's analysis, so a match counts once.
OPEN, CLEARED, RESTRICTED, BANNED = "open", "cleared", "restricted", "banned"

fair_play_matches = Table(
    "fair_play_matches",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("match_id", String(200), primary_key=True),
    Column("ended_ms", BigInteger, nullable=False),
    Column("profile", String(16), nullable=False),
    Column("decisions", Integer, nullable=False),
    Column("close", Integer, nullable=False),
    Column("close_best", Integer, nullable=False),
    Column("clear", Integer, nullable=False),
    Column("clear_best", Integer, nullable=False),
    Column("checker_lost", Float, nullable=False),  # points over the checker plays
    Column("cube_decisions", Integer, nullable=False),
    Column("cube_lost", Float, nullable=False),
    Column("close_think_ms", BigInteger, nullable=False),
    Column("clear_think_ms", BigInteger, nullable=False),
    Column("choice", Float, nullable=False),
    Column("timing", Float, nullable=False),
    Column("score", Float, nullable=False),
    Column("statistic", Float, nullable=False),  # the test's value after this match
    Column("seq", Integer, nullable=False),  # the order the test took the player's matches in
    Index("ix_fair_play_matches_order", "player_id", "seq"),
)

fair_play_players = Table(
    "fair_play_players",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("statistic", Float, nullable=False),
    Column("seq", Integer, nullable=False),  # matches taken so far
    Column("run_seq", Integer, nullable=False),  # the first match of the current run (0: none)
    Column("open_flag", Integer, nullable=False),  # 0: none open
)

fair_play_flags = Table(
    "fair_play_flags",
    metadata,
    Column("flag_id", Integer, primary_key=True, autoincrement=True),
    Column("player_id", String(100), nullable=False),
    Column("flagged_ms", BigInteger, nullable=False),
    Column("statistic", Float, nullable=False),
    Column("threshold", Float, nullable=False),
    Column("first_seq", Integer, nullable=False),  # the evidence: the player's matches
    Column("last_seq", Integer, nullable=False),  # first_seq..last_seq
    Column("state", String(12), nullable=False),
    Column("decided_by", String(64), nullable=False),
    Column("reason", String(200), nullable=False),
    Column("decided_ms", BigInteger, nullable=False),
    Index("ix_fair_play_flags_state", "state", "flag_id"),
)
