"""Settings of the analysis service (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from services.common.settings import (
    EventReaderSettings,
    database_url_setting,
    load,
    setting,
)

LuckAt = Literal["read", "judge"]


@dataclass(frozen=True)
class AnalysisSettings(EventReaderSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50056, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9106, "Metrics HTTP port.", min=0, max=65535)
    database_url: str = database_url_setting("sqlite+aiosqlite:///.data/analysis.db")
    analysis_lease_s: float = setting(
        "BG_ANALYSIS_LEASE_S",
        300.0,
        "Seconds a worker holds a match it analyses; a worker that died lets it go after this.",
        min=1,
    )
    nice: int = setting(
        "BG_NICE",
        10,
        "CPU niceness the process (and its autogroup, when it leads its session) takes at "
        "start: on a shared box, play goes first.",
        min=-20,
        max=19,
    )
    population_kept_s: float = setting(
        "BG_ANALYSIS_POPULATION_S",
        300.0,
        "Seconds a replica keeps its picture of every player's error rate, which places a "
        "player's among them (PlayerTrend's better_than): one grouped read this often.",
        min=0,
    )
    luck: LuckAt = setting(
        "BG_ANALYSIS_LUCK",
        "read",
        "When the rolls' luck is worked out (two thirds of the analysis's CPU): read, at the "
        "first GetAnalysis of a match (a match nobody opens costs its judging only), or judge, "
        "with the match (every analysis ready with its luck).",
    )
    fair_play_threshold: float = setting(
        "BG_FAIR_PLAY_THRESHOLD",
        22.0,
        "The fair-play test's threshold (log likelihood ratio): a player whose CUSUM reaches it "
        "is flagged for review. 22 flags 0.4% of simulated honest players over 100 matches "
        "(docs/fair-play.md); lower flags sooner and more honest players. 0 flags every "
        "player after their first tested match (a test cluster's plumbing check).",
        min=0,
    )
    analysis_attempts: int = setting(
        "BG_ANALYSIS_ATTEMPTS",
        3,
        "Times a match is taken before it is marked failed (a record that kills its worker).",
        min=1,
    )


def load_settings(environ: Mapping[str, str] | None = None) -> AnalysisSettings:
    return load(AnalysisSettings, environ)
