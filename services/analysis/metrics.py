"""The analysis service's own metrics: the queue (backlog, age) and the work (decisions/s)."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge, Histogram


class AnalysisMetrics:
    def __init__(self, registry: Any) -> None:
        self.queued = Counter(
            "bg_analysis_queued_total",
            "Finished matches consumed, by result (queued, duplicate, ignored).",
            ["result"],
            registry=registry,
        )
        self.matches = Counter(
            "bg_analysis_matches_total",
            "Matches analysed, by result (done, failed, duplicate).",
            ["result"],
            registry=registry,
        )
        self.decisions = Counter(
            "bg_analysis_decisions_total",
            "Decisions judged (rate: decisions per second).",
            registry=registry,
        )
        self.backlog = Gauge(
            "bg_analysis_backlog", "Matches waiting to be analysed.", registry=registry
        )
        self.oldest_age = Gauge(
            "bg_analysis_oldest_age_seconds",
            "How long the oldest waiting match has waited.",
            registry=registry,
        )
        self.seconds = Histogram(
            "bg_analysis_match_seconds",
            "Time to analyse one match.",
            buckets=(0.5, 1, 2, 5, 10, 20, 40, 80, 160),
            registry=registry,
        )
        self.lag = Gauge(
            "bg_analysis_consumer_lag",
            "Messages behind the end of table-events.",
            registry=registry,
        )
