"""The ledger's tables (SQLAlchemy Core). Alembic migrations create them; see migrations/."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

# Account ids: "player:<id>", "escrow:<match>", "hold:<match>" (diamonds reserved for a raise or a
# boost of that match, not yet spent), "house", "external" (the outside world: the only account
# that may go negative; it is minus the total ever deposited, less operators' debits).
accounts = Table(
    "accounts",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("balance", BigInteger, nullable=False, server_default="0"),
    Column("created_ms", BigInteger, nullable=False),
    CheckConstraint("kind = 'external' OR balance >= 0", name="ck_accounts_no_overdraft"),
)

# One row per idempotency key: what was asked (hash) and what was answered.
operations = Table(
    "operations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("idem_key", String(200), nullable=False, unique=True),
    Column("kind", String(16), nullable=False),
    Column("request_hash", String(64), nullable=False),
    Column("response", Text, nullable=False),
    Column("match_id", String(200), nullable=True),
    Column("created_ms", BigInteger, nullable=False),
    Column("memo", Text, nullable=True),  # an operator's adjustment: "<operator>: <reason>"
)

# Immutable double-entry lines: `amount` leaves `debit` and arrives in `credit`.
transfers = Table(
    "transfers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("operation_id", Integer, ForeignKey("operations.id"), nullable=False),
    Column("debit", String(200), ForeignKey("accounts.id"), nullable=False),
    Column("credit", String(200), ForeignKey("accounts.id"), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    CheckConstraint("amount > 0", name="ck_transfers_positive"),
    Index("ix_transfers_debit", "debit", "id"),
    Index("ix_transfers_credit", "credit", "id"),
)

# One escrow per match; closed (settled or refunded) at most once.
escrows = Table(
    "escrows",
    metadata,
    Column("match_id", String(200), primary_key=True),
    Column("player_a", String(200), nullable=False),
    Column("player_b", String(200), nullable=False),
    Column("stake_a", BigInteger, nullable=False),
    Column("stake_b", BigInteger, nullable=False),
    # The stake each side opened with: raises are sized from it (bet x cube / 2), never from the
    # stakes, which lag while a take's capture is still on its way.
    Column("bet", BigInteger, nullable=False, server_default="0"),
    Column("status", String(16), nullable=False),
    Column("closed_operation_id", Integer, ForeignKey("operations.id"), nullable=True, unique=True),
    Column("created_ms", BigInteger, nullable=False),
    CheckConstraint("status IN ('open', 'settled', 'refunded')", name="ck_escrows_status"),
    Index("ix_escrows_open", "status", "created_ms"),  # the reconciler's scan
)

# A tournament's prize pool (0006): its buy-ins are held in `hold:<tournament>` while it registers
# (holds of purpose 'buyin', their match_id the tournament's id), captured into
# `pool:<tournament>` at the start, then paid out to the final ranks (less the house fee) or
# refunded, once.
pools = Table(
    "pools",
    metadata,
    Column("tournament_id", String(200), primary_key=True),
    Column("buy_in", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("entrants", Integer, nullable=False, server_default="0"),
    Column("created_ms", BigInteger, nullable=False),
    Column("closed_operation_id", Integer, ForeignKey("operations.id"), nullable=True, unique=True),
    CheckConstraint("status IN ('open', 'running', 'paid', 'refunded')", name="ck_pools_status"),
)

# Diamonds reserved in `hold:<match>` until captured (the double is taken: into the escrow; the
# boost is applied: to the house) or released back to the player. `hold_key` is the idempotency
# key of the operation that placed it (a raise holds both players under one key).
holds = Table(
    "holds",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("hold_key", String(200), nullable=False),
    Column("match_id", String(200), nullable=False),
    Column("player_id", String(200), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("purpose", String(16), nullable=False),
    Column("cube", Integer, nullable=False, server_default="0"),  # raise: the cube if taken
    Column("status", String(16), nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    Column("closed_operation_id", Integer, ForeignKey("operations.id"), nullable=True),
    UniqueConstraint("hold_key", "player_id", name="uq_holds_key_player"),
    CheckConstraint("amount > 0", name="ck_holds_positive"),
    CheckConstraint("purpose IN ('raise', 'boost', 'buyin')", name="ck_holds_purpose"),
    CheckConstraint("status IN ('held', 'captured', 'released')", name="ck_holds_status"),
    Index("ix_holds_match", "match_id", "status"),
)

# Events written in the same transaction as the operation, relayed to Kafka afterwards.
outbox = Table(
    "outbox",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("topic", String(100), nullable=False),
    Column("key", String(200), nullable=False),
    Column("payload", LargeBinary, nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    Column("published_ms", BigInteger, nullable=True),
    # The event log's receipt for the row, and when the log said every group had it (KEPT
    # receipts: at once). Until then the row is kept, and sent again if the log lost it (0007).
    Column("sent_receipt", String(128), nullable=True),
    Column("confirmed_ms", BigInteger, nullable=True),
    Index("ix_outbox_unpublished", "published_ms", "id"),
    Index("ix_outbox_unconfirmed", "confirmed_ms", "published_ms", "id"),
)
