"""The table service's own metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from services.common.metrics import ServiceMetrics

LATENESS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class TableMetrics:
    def __init__(self, base: ServiceMetrics) -> None:
        r = base.registry
        self.commands = Counter(
            "bg_table_commands_total",
            "Commands by type and outcome.",
            ["command", "outcome"],
            registry=r,
        )
        self.rejections = Counter(
            "bg_table_rejections_total", "Refused commands by reason code.", ["reason"], registry=r
        )
        self.clock_refusals = Counter(
            "bg_table_clock_refusals_total",
            "Commits the store refused for their time: ahead of its clock, or trailing it too far "
            "(the replica syncs its estimate of the store's clock and decides again).",
            ["how"],
            registry=r,
        )
        self.cas_conflicts = Counter(
            "bg_table_cas_conflicts_total",
            "Compare-and-set conflicts (another replica won).",
            registry=r,
        )
        self.live_tables = Gauge(
            "bg_table_live_tables",
            "Tables with a pending deadline in the shards this replica looks after (sum them).",
            registry=r,
        )
        self.shards = Gauge(
            "bg_table_shards_owned",
            "Virtual shards whose clocks and relay this replica looks after.",
            registry=r,
        )
        self.redis_used = Gauge(
            "bg_redis_used_memory_bytes", "Valkey/Redis used_memory (INFO memory).", registry=r
        )
        self.redis_max = Gauge(
            "bg_redis_maxmemory_bytes",
            "Valkey/Redis maxmemory (0: unlimited); writes fail past it (noeviction).",
            registry=r,
        )
        self.clock_lateness = Histogram(
            "bg_table_clock_lateness_seconds",
            "Time a deadline was applied minus the deadline.",
            ["kind"],
            buckets=LATENESS_BUCKETS,
            registry=r,
        )
        self.timeouts = Counter(
            "bg_table_timeouts_total", "Deadlines applied, by kind.", ["kind"], registry=r
        )
        self.relay_lag = Gauge(
            "bg_table_relay_lag_seconds",
            "Age of the oldest table event of the shards this replica looks after not yet "
            "accepted by the event log (read every second, whether or not a relay pass ends).",
            registry=r,
        )
        self.relayed = Counter(
            "bg_table_relayed_events_total", "Table events published to Kafka.", registry=r
        )
        self.unconfirmed_age = Gauge(
            "bg_table_relay_unconfirmed_seconds",
            "Embedded log: how long ago the oldest table record some consumer group has not "
            "read yet was relayed.",
            registry=r,
        )
