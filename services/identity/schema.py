"""The identity service's tables (SQLAlchemy Core): accounts, devices, refresh tokens, bans and
the operators' audit log. Alembic migrations create them; see migrations/."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, String, Table, Text

metadata = MetaData()

# One row per player with an account. Personal data (name, email, password) goes when the
# account is deleted; the id stays (the ledger and histories refer to it).
players = Table(
    "players",
    metadata,
    Column("player_id", String(40), primary_key=True),
    Column("display_name", String(40), nullable=False),
    Column("name_key", String(40), nullable=True, unique=True),  # casefolded: unique names
    Column("name_changed_ms", BigInteger, nullable=False, server_default="0"),
    Column("email", String(254), nullable=True, unique=True),
    Column("password_hash", String(200), nullable=True),
    Column("failed_logins", Integer, nullable=False, server_default="0"),
    Column("locked_until_ms", BigInteger, nullable=False, server_default="0"),
    Column("created_ms", BigInteger, nullable=False),
    Column("deleted_ms", BigInteger, nullable=True),
    Column("granted_ms", BigInteger, nullable=True),  # the starter grant credited (0002)
)

# A device id is a secret the app keeps; only its SHA-256 is stored.
devices = Table(
    "devices",
    metadata,
    Column("device_hash", String(64), primary_key=True),
    Column("player_id", String(40), nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    Index("ix_devices_player", "player_id"),
)

# Refresh tokens, stored hashed. Each use rotates the token within its family (successor_hash:
# the one that replaced it, 0004); a token used twice past the race window (stolen and
# replayed) revokes the whole family.
refresh_tokens = Table(
    "refresh_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("family", String(32), nullable=False),
    Column("player_id", String(40), nullable=False),
    Column("expires_ms", BigInteger, nullable=False),
    Column("used_ms", BigInteger, nullable=True),
    Column("revoked_ms", BigInteger, nullable=True),
    Column("successor_hash", String(64), nullable=True),
    Index("ix_refresh_family", "family"),
    Index("ix_refresh_player", "player_id"),
)

# Players banned now (guests too: a ban names a player id, account or not). Lifting a ban deletes
# the row; the audit log keeps both.
bans = Table(
    "bans",
    metadata,
    Column("player_id", String(64), primary_key=True),
    Column("banned_ms", BigInteger, nullable=False),
    Column("operator", String(64), nullable=False),
    Column("reason", Text, nullable=False),
)

# Players an operator restricted to casual unrated play (issue 61: a fair-play decision).
restrictions = Table(
    "restrictions",
    metadata,
    Column("player_id", String(64), primary_key=True),
    Column("restricted_ms", BigInteger, nullable=False),
    Column("operator", String(64), nullable=False),
    Column("reason", Text, nullable=False),
)

# Every admin action: who, when, what (and on whom), why, and how it ended. Append only.
admin_audit = Table(
    "admin_audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_ms", BigInteger, nullable=False),
    Column("operator", String(64), nullable=False),
    Column("action", String(32), nullable=False),
    Column("target", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("outcome", String(64), nullable=False),
    Column("detail", Text, nullable=False),
    Index("ix_admin_audit_target", "target", "id"),
)
