"""Settings of the gateway (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import (
    EventLoop,
    ServiceSettings,
    load,
    peer_setting,
    redis_url_setting,
    setting,
)
from services.contracts import peers


@dataclass(frozen=True)
class GatewaySettings(ServiceSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50051, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9101, "Metrics HTTP port.", min=0, max=65535)
    event_loop: EventLoop = setting(
        "BG_EVENT_LOOP", "uvloop", "Event loop: uvloop (measured faster here) or asyncio."
    )
    ws_port: int = setting(
        "BG_WS_PORT", 8081, "WebSocket port for browsers (0 = any free port).", min=0, max=65535
    )
    redis_url: str = redis_url_setting()
    token_secret: str = setting(
        "BG_TOKEN_SECRET",
        "",
        "HMAC secret that signs player tokens (shared by gateway replicas).",
        secret=True,
    )
    token_keys: str = setting(
        "BG_TOKEN_KEYS",
        "",
        "Token keys for rotation, kid=secret pairs separated by commas: the first signs, all "
        "verify (empty: BG_TOKEN_SECRET alone).",
        secret=True,
    )
    bots_secret: str = setting(
        "BG_BOTS_SECRET",
        "",
        "The bots worker's service credential: it signs in as computer seats with it (empty: no "
        "service logins). No service but the gateway holds the token-signing key.",
        secret=True,
    )
    ban_sync_s: float = setting(
        "BG_BAN_SYNC_S",
        0.5,
        "How often a gateway looks for bans made on another replica (one GET of a counter).",
        min=0.05,
    )
    token_ttl_s: int = setting(
        "BG_TOKEN_TTL_S", 86_400, "Seconds a guest's token stays valid.", min=60
    )
    access_ttl_s: int = setting(
        "BG_ACCESS_TTL_S",
        900,
        "Seconds an account's access token stays valid (renewed with its refresh token).",
        min=60,
    )
    matchmaking_addr: str = peer_setting(peers.MATCHMAKING)
    wallet_addr: str = peer_setting(peers.WALLET)
    leaderboard_addr: str = peer_setting(peers.LEADERBOARD)
    analysis_addr: str = peer_setting(peers.ANALYSIS)
    identity_addr: str = peer_setting(peers.IDENTITY)
    table_addrs: tuple[str, ...] = peer_setting(peers.TABLE)
    command_streams: int = setting(
        "BG_TABLE_COMMAND_STREAMS",
        4,
        "SubmitCommands streams to the table replicas (a table's commands keep to one).",
        min=1,
        max=64,
    )
    presence_ttl_s: float = setting(
        "BG_PRESENCE_TTL_S",
        15.0,
        "Seconds a gateway's presence lease lives unrenewed: after a gateway dies, its "
        "players count as disconnected this long later (then the 60 s away rule starts).",
        min=1,
    )
    rate_per_s: float = setting(
        "BG_RATE_PER_S",
        50.0,
        "Calls and Play commands together, per second per player, over every gateway and "
        "stream (a token bucket of BG_RATE_BURST), then RATE_LIMITED with retry_after_ms.",
        min=0.1,
    )
    rate_burst: float = setting(
        "BG_RATE_BURST",
        50.0,
        "Calls (and Play commands) a player may make at once after a pause: the token "
        "bucket's size, refilled at BG_RATE_PER_S.",
        min=1,
    )
    rate_per_peer_s: float = setting(
        "BG_RATE_PER_PEER_S",
        1000.0,
        "Calls per second allowed per client address, over every gateway (a flood guard: "
        "players behind one NAT or proxy share it).",
        min=0.1,
    )
    rate_per_login_s: float = setting(
        "BG_RATE_PER_LOGIN_S",
        5.0,
        "Logins per second allowed per device or email, over every gateway (with the lockout "
        "after failed passwords: guessing from many addresses).",
        min=0.1,
    )
    friends_refresh_s: float = setting(
        "BG_FRIENDS_REFRESH_S",
        15.0,
        "How often a Friends stream looks again at what other gateways changed (what its own "
        "gateway changes is sent at once); each look costs a view (benchmarks/bench_friends.py).",
        min=0.1,
        max=60,
    )
    rate_sync_s: float = setting(
        "BG_RATE_SYNC_S",
        0.1,
        "How often a gateway shares its call counts through Redis (the limits' slack).",
        min=0.01,
        max=1.0,
    )


def load_settings(environ: Mapping[str, str] | None = None) -> GatewaySettings:
    return load(GatewaySettings, environ)
