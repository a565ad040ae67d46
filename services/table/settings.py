"""Settings of the table service (environment variables: docs/settings.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.settings import (
    EventLoop,
    EventWriterSettings,
    load,
    peer_setting,
    redis_url_setting,
    setting,
)
from services.contracts import peers


@dataclass(frozen=True)
class TableSettings(EventWriterSettings):
    grpc_port: int = setting("BG_GRPC_PORT", 50061, "gRPC port.", min=0, max=65535)
    metrics_port: int = setting("BG_METRICS_PORT", 9111, "Metrics HTTP port.", min=0, max=65535)
    event_loop: EventLoop = setting(
        "BG_EVENT_LOOP", "uvloop", "Event loop: uvloop (measured faster here) or asyncio."
    )
    nice: int = setting(
        "BG_NICE",
        -5,
        "CPU niceness the process (and its autogroup, when it leads its session) takes at "
        "start: on a shared box the clocks fire first (needs CAP_SYS_NICE; without it the "
        "process keeps its own).",
        min=-20,
        max=19,
    )
    redis_url: str = redis_url_setting()
    wallet_addr: str = peer_setting(peers.WALLET)
    clock_scale: float = setting(
        "BG_CLOCK_SCALE", 1.0, "Multiplies every rules duration (tests and load tests).", min=0.0001
    )
    clock_workers: bool = setting("BG_TABLE_CLOCKS", True, "Run the clock worker in this replica.")
    relay: bool = setting("BG_TABLE_RELAY", True, "Run the Kafka relay in this replica.")
    lean_scripts: bool = setting(
        "BG_TABLE_LEAN_SCRIPTS",
        True,
        "Send the table store's scripts (the commit, the relay's) by the lean client (one "
        "pipelined connection, services/common/lean_redis.py) on a standalone redis:// Redis; "
        "false: by redis-py, as every other call. A Valkey Cluster or TLS always uses redis-py.",
    )
    relay_sweep_s: float = setting(
        "BG_TABLE_RELAY_SWEEP_S",
        5.0,
        "Seconds between the relay's looks at every pending table of its shards (a replica's "
        "own commits leave at once; this finds those of replicas that died before relaying).",
        min=0.05,
    )
    relay_interval_s: float = setting(
        "BG_TABLE_RELAY_INTERVAL_S",
        0.05,
        "Seconds a relay waits between passes while commits keep coming: each pass sends every "
        "commit since the last in one batch, so a longer wait costs less CPU per event and "
        "adds as much to the events' way to Kafka's consumers (never to the players' streams).",
        min=0.001,
        max=1.0,
    )
    shard_lease_ms: int = setting(
        "BG_SHARD_LEASE_MS",
        750,
        "Milliseconds a replica's claim on its shards lasts unrenewed (renewed every quarter of "
        "it): a replica killed outright leaves its shards' deadlines waiting up to 1.25x this. "
        "A replica paused longer loses its shards meanwhile (correct still: the compare-and-set "
        "decides, not the owner).",
        min=100,
    )
    advertise_host: str = setting(
        "BG_ADVERTISE_HOST",
        "",
        "Host the gateways reach this replica at, written with its shard lease so they send a "
        "table's commands to its owner (in Kubernetes the pod IP; empty: BG_HOST, or "
        "127.0.0.1 when that binds every interface).",
    )
    cache_size: int = setting(
        "BG_TABLE_CACHE_SIZE",
        4096,
        "Tables whose decoded state this replica keeps (0 = none: every command reads Redis).",
        min=0,
    )


def load_settings(environ: Mapping[str, str] | None = None) -> TableSettings:
    return load(TableSettings, environ)
