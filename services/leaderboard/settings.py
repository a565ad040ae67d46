"""Settings of the leaderboard service (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import (
    EventReaderSettings,
    database_url_setting,
    load,
    redis_url_setting,
    setting,
)


@dataclass(frozen=True)
class LeaderboardSettings(EventReaderSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50054, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9104, "Metrics HTTP port.", min=0, max=65535)
    redis_url: str = redis_url_setting()
    database_url: str = database_url_setting("sqlite+aiosqlite:///.data/leaderboard.db")
    season_days: int = setting(
        "BG_SEASON_DAYS", 7, "Season length in days (weeks from Monday UTC).", min=1
    )

    @property
    def season_ms(self) -> int:
        return self.season_days * 86_400_000


def load_settings(environ: Mapping[str, str] | None = None) -> LeaderboardSettings:
    return load(LeaderboardSettings, environ)
