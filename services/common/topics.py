"""Kafka topics of the cluster and their partition counts (keyed by table id / account)."""

TABLE_EVENTS = "table-events"
WALLET_EVENTS = "wallet-events"

TOPICS: dict[str, int] = {TABLE_EVENTS: 8, WALLET_EVENTS: 4}
