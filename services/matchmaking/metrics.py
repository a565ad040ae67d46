"""Matchmaking's own metrics (beside the shared RPC metrics): the tournaments' director."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from services.common.metrics import ServiceMetrics


class TournamentMetrics:
    def __init__(self, base: ServiceMetrics) -> None:
        r = base.registry
        self.running = Gauge(
            "bg_tournaments_running", "Tournaments registering or running.", registry=r
        )
        self.unsettled = Gauge(
            "bg_tournaments_ended_unsettled",
            "Tournaments ended (finished or cancelled) whose money is not yet paid or refunded, "
            "or whose result the event log's readers do not have yet.",
            registry=r,
        )
        self.oldest_unsettled = Gauge(
            "bg_tournament_oldest_unsettled_seconds",
            "How long the oldest ended, unsettled tournament has waited.",
            registry=r,
        )
        self.settled = Counter(
            "bg_tournaments_settled_total",
            "Wagered tournaments' pools closed, by how: paid (to the ranks) or refunded.",
            ["how"],
            registry=r,
        )
