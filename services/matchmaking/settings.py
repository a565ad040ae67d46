"""Settings of the matchmaking service (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import (
    EventWriterSettings,
    load,
    peer_setting,
    redis_url_setting,
    setting,
)
from services.contracts import peers


@dataclass(frozen=True)
class MatchmakingSettings(EventWriterSettings):
    """Finished tournaments' results leave on the event log (tournament-events)."""

    grpc_port: int = setting("BG_GRPC_PORT", 50052, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9102, "Metrics HTTP port.", min=0, max=65535)
    redis_url: str = redis_url_setting()
    wallet_addr: str = peer_setting(peers.WALLET)
    table_addrs: tuple[str, ...] = peer_setting(peers.TABLE)
    code_ttl_s: int = setting("BG_CODE_TTL_S", 3600, "Seconds a party code stays valid.", min=60)
    max_open_tables: int = setting(
        "BG_MAX_OPEN_TABLES",
        5,
        "Tables one player may have waiting for an opponent at once (party tables and quick-match "
        "queues together); more is TOO_MANY_TABLES.",
        min=1,
    )
    tournament_pass_s: float = setting(
        "BG_TOURNAMENT_PASS_S",
        1.0,
        "How often each matchmaking replica drives the unfinished tournaments (deals the ready "
        "pairings, records the ended matches' winners).",
        min=0.05,
    )
    invite_base: str = setting(
        "BG_INVITE_BASE", "https://play.example/join/", "Invite link prefix (the code is appended)."
    )


def load_settings(environ: Mapping[str, str] | None = None) -> MatchmakingSettings:
    return load(MatchmakingSettings, environ)
