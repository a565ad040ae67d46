"""Settings of the leaderboard service (environment variables, see README)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import (
    KafkaLog,
    ServiceSettings,
    consumer_share_setting,
    database_url_setting,
    kafka_bootstrap_setting,
    kafka_log_setting,
    kafka_namespace_setting,
    kafka_partitions_setting,
    kafka_rotate_setting,
    load,
    redis_url_setting,
    setting,
)


@dataclass(frozen=True)
class LeaderboardSettings(ServiceSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50054, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9104, "Metrics HTTP port.", min=0, max=65535)
    redis_url: str = redis_url_setting()
    database_url: str = database_url_setting("sqlite+aiosqlite:///.data/leaderboard.db")
    kafka_bootstrap: str = kafka_bootstrap_setting()
    kafka_namespace: str = kafka_namespace_setting()
    kafka_log: KafkaLog = kafka_log_setting()
    kafka_rotate_s: float = kafka_rotate_setting()
    kafka_partitions: int = kafka_partitions_setting()
    consumer_share: str = consumer_share_setting()
    season_days: int = setting(
        "BG_SEASON_DAYS", 7, "Season length in days (weeks from Monday UTC).", min=1
    )

    @property
    def season_ms(self) -> int:
        return self.season_days * 86_400_000


def load_settings(environ: Mapping[str, str] | None = None) -> LeaderboardSettings:
    return load(LeaderboardSettings, environ)
