"""Settings of the identity service (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import (
    ServiceSettings,
    database_url_setting,
    load,
    peer_setting,
    redis_url_setting,
    setting,
)
from services.contracts import peers
from services.contracts.bounds import CHAT_LIMIT, CHAT_MAX


@dataclass(frozen=True)
class IdentitySettings(ServiceSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50057, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9107, "Metrics HTTP port.", min=0, max=65535)
    database_url: str = database_url_setting("sqlite+aiosqlite:///.data/identity.db")
    redis_url: str = redis_url_setting()
    refresh_ttl_s: int = setting(
        "BG_REFRESH_TTL_S", 30 * 86_400, "Seconds an account's refresh token stays valid.", min=300
    )
    refresh_keys: str = setting(
        "BG_REFRESH_KEYS",
        "",
        "Secrets a used refresh token's successor is derived from, separated by commas: the "
        "first derives, all are recognised (so a retry across a rotation still gets its "
        "session). Shared by identity replicas; empty: a random one, one replica alone.",
        secret=True,
    )
    operator_keys: str = setting(
        "BG_OPERATOR_KEYS",
        "",
        "Operators and their keys, name=key pairs separated by commas (keys of 32+ characters): "
        "AdminService.OperatorLogin takes them (empty: no operators).",
        secret=True,
    )
    operator_rights: str = setting(
        "BG_OPERATOR_RIGHTS",
        "",
        "What some operators may do, name=right+right pairs separated by commas, a right being "
        "an audit action (lookup, adjust, ban, unban, close_table, stale_escrows, replay, "
        "audit, chat_reports, chat_resolve, chat_remove, chat_silence, tournament_create, "
        "tournament_cancel, stale_pools, pool_refund, restrict, unrestrict, review, "
        "review_decide, tournaments): e.g. loadtest=adjust+lookup. An operator not named here "
        "may do everything.",
    )
    console_port: int = setting(
        "BG_CONSOLE_PORT",
        8082,
        "HTTP and WebSocket port of the operators' web console (docs/operations.md): its page "
        "and the admin API's calls over one WebSocket (0 = any free port).",
        min=0,
        max=65535,
    )
    operator_secret: str = setting(
        "BG_OPERATOR_SECRET",
        "",
        "HMAC secret (32+ characters) that signs operators' tokens, shared by identity "
        "replicas (empty: a random one, valid on this replica only). Not the players' key: a "
        "player's token is never an operator's.",
        secret=True,
    )
    operator_ttl_s: int = setting(
        "BG_OPERATOR_TTL_S", 900, "Seconds an operator's token stays valid.", min=60
    )
    operator_rate_per_s: float = setting(
        "BG_OPERATOR_RATE_PER_S",
        100.0,
        "Operators' calls per second from one address, over every identity replica.",
        min=0.1,
    )
    operator_logins_per_s: float = setting(
        "BG_OPERATOR_LOGINS_PER_S",
        5.0,
        "Sign-ins per second for one operator name, over every identity replica (a guessed "
        "key meets this first).",
        min=0.01,
    )
    wallet_operator_token: str = setting(
        "BG_WALLET_OPERATOR_TOKEN",
        "",
        "The wallet's operator token: the admin service's credits, debits and escrow lists.",
        secret=True,
    )
    chat_max_chars: int = setting(
        "BG_CHAT_MAX_CHARS",
        CHAT_MAX,
        "Characters a chat message may hold.",
        min=1,
        max=CHAT_LIMIT,
    )
    chat_per_s: float = setting(
        "BG_CHAT_PER_S",
        0.5,
        "Chat messages per second per player over every identity replica (a token bucket of "
        "BG_CHAT_BURST), then RATE_LIMITED with retry_after_ms.",
        min=0.01,
    )
    chat_burst: float = setting(
        "BG_CHAT_BURST", 5.0, "Chat messages a player may send at once after a pause.", min=1
    )
    chat_guests: bool = setting(
        "BG_CHAT_GUESTS",
        True,
        "Whether guests (players without an account) may chat; they always read it.",
    )
    friends_max: int = setting(
        "BG_FRIENDS_MAX", 200, "Players one player may follow.", min=1, max=5000
    )
    challenge_ttl_s: int = setting(
        "BG_CHALLENGE_TTL_S",
        300,
        "Seconds a challenge waits for its answer before it lapses.",
        min=10,
        max=86_400,
    )
    chat_sync_s: float = setting(
        "BG_CHAT_SYNC_S",
        0.1,
        "How often an identity replica shares its players' chat counts through Redis (the "
        "chat limit's slack).",
        min=0.01,
        max=1.0,
    )
    matchmaking_addr: str = peer_setting(peers.MATCHMAKING)
    wallet_addr: str = peer_setting(peers.WALLET)
    leaderboard_addr: str = peer_setting(peers.LEADERBOARD)
    analysis_addr: str = peer_setting(peers.ANALYSIS)
    table_addrs: tuple[str, ...] = peer_setting(peers.TABLE)


def load_settings(environ: Mapping[str, str] | None = None) -> IdentitySettings:
    return load(IdentitySettings, environ)
