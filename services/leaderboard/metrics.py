"""The leaderboard's own metrics."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge


class LeaderboardMetrics:
    def __init__(self, registry: Any) -> None:
        self.consumed = Counter(
            "bg_leaderboard_events_total",
            "Events consumed, by type and result.",
            ["type", "result"],
            registry=registry,
        )
        self.lag = Gauge(
            "bg_leaderboard_consumer_lag",
            "Messages behind the end of the topics.",
            registry=registry,
        )
        self.board_size = Gauge(
            "bg_leaderboard_board_size",
            "Players on each current board.",
            ["board"],
            registry=registry,
        )
