"""The cluster's Kafka topics: their logical names, partition counts (keyed by table id /
account) and the consumer groups (by service) that read each, which is what "consumed" means to
a producer whose broker may forget and to the keeper deleting history
(services/common/embedded_generations.py). The event log's topology in one place."""

from __future__ import annotations

from services.common.topics import Namespace

TABLE_EVENTS = "table-events"
WALLET_EVENTS = "wallet-events"
TOURNAMENT_EVENTS = "tournament-events"  # finished tournaments' results, by tournament id

TOPICS: dict[str, int] = {TABLE_EVENTS: 8, WALLET_EVENTS: 4, TOURNAMENT_EVENTS: 1}
READERS: dict[str, tuple[str, ...]] = {
    TABLE_EVENTS: ("wallet", "leaderboard", "analysis"),
    WALLET_EVENTS: ("leaderboard",),
    TOURNAMENT_EVENTS: ("leaderboard",),
}


def cluster_topics(namespace: Namespace) -> dict[str, int]:
    """Every topic the cluster needs in `namespace`, with its partition count."""
    return {namespace.topic(name): parts for name, parts in TOPICS.items()}
