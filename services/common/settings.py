"""Typed settings read from the environment, with errors that name the variable.

Each service declares a frozen dataclass whose fields are made with `setting(...)`; `load()` reads
them from a mapping (the process environment by default). A bad value never falls back silently
to a default: it raises `SettingsError` naming the variable, the value and what was expected.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

from services.common.peer import Peer
from services.common.topics import NAMESPACE_PATTERN

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class SettingsError(ValueError):
    """A setting from the environment is missing or malformed."""

    def __init__(self, env: str, value: str, expected: str) -> None:
        super().__init__(f"{env}={value!r}: expected {expected}")
        self.env = env
        self.value = value
        self.expected = expected


def setting(
    env: str,
    default: Any,
    help: str,
    *,
    min: float | None = None,
    max: float | None = None,
    secret: bool = False,
    pattern: str | None = None,
) -> Any:
    """Declare a settings field read from environment variable `env` (a str may have to match
    the regular expression `pattern` whole)."""
    meta = {"env": env, "help": help, "min": min, "max": max, "secret": secret, "pattern": pattern}
    if isinstance(default, list | dict | set):
        raise TypeError("use a tuple for sequence defaults")
    return field(default=default, metadata=meta)


def _parse(env: str, raw: str, hint: Any) -> Any:
    origin = get_origin(hint)
    if origin is Literal:
        choices = get_args(hint)
        if raw not in choices:
            raise SettingsError(env, raw, "one of " + ", ".join(map(str, choices)))
        return raw
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in get_args(hint) if a is not type(None)]
        if raw == "":
            return None
        return _parse(env, raw, inner[0])
    if origin is tuple:
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if hint is bool:
        low = raw.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise SettingsError(env, raw, "a boolean (true/false, 1/0, yes/no, on/off)")
    if hint is int:
        try:
            return int(raw.strip())
        except ValueError:
            raise SettingsError(env, raw, "an integer") from None
    if hint is float:
        try:
            return float(raw.strip())
        except ValueError:
            raise SettingsError(env, raw, "a number") from None
    if hint is Path:
        return Path(raw)
    if hint is str:
        return raw
    raise TypeError(f"unsupported settings type {hint!r} for {env}")


def load(cls: type[T], environ: Mapping[str, str] | None = None) -> T:
    """Build settings `cls` from `environ` (default: the process environment)."""
    env_map = os.environ if environ is None else environ
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = f.metadata.get("env")
        if name is None or name not in env_map:
            continue
        raw = env_map[name]
        value = _parse(name, raw, hints[f.name])
        lo, hi = f.metadata.get("min"), f.metadata.get("max")
        if isinstance(value, int | float) and not isinstance(value, bool):
            if lo is not None and value < lo:
                raise SettingsError(name, raw, f"a value >= {lo}")
            if hi is not None and value > hi:
                raise SettingsError(name, raw, f"a value <= {hi}")
        pattern = f.metadata.get("pattern")
        if pattern is not None and isinstance(value, str) and not re.fullmatch(pattern, value):
            raise SettingsError(name, raw, f"a value matching {pattern}")
        values[f.name] = value
    return cls(**values)


def describe(cls: type[Any]) -> list[tuple[str, Any, str, bool]]:
    """(env var, default value, help, secret) for every setting of `cls`, for docs/settings.md
    (infra/cli/settings_reference.py)."""
    rows = []
    for f in dataclasses.fields(cls):
        if "env" not in f.metadata:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        secret = bool(f.metadata.get("secret"))
        rows.append((f.metadata["env"], default, f.metadata["help"], secret))
    return rows


def redacted(settings: Any) -> dict[str, Any]:
    """The settings as a dict with secret values (and URL passwords) masked, safe to log."""
    from services.common.logs import redact_text

    out: dict[str, Any] = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if f.metadata.get("secret"):
            out[f.name] = "***" if value else ""
        elif isinstance(value, str):
            out[f.name] = redact_text(value)
        else:
            out[f.name] = value if not isinstance(value, Path) else str(value)
    return out


EventLoop = Literal["asyncio", "uvloop"]
KafkaLog = Literal["kafka", "embedded"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
LogFormat = Literal["json", "text"]
OtelExporter = Literal["none", "console", "otlp"]


@dataclass(frozen=True)
class ServiceSettings:
    """Settings every service has. Each service subclasses this and overrides the ports."""

    host: str = setting("BG_HOST", "127.0.0.1", "Interface the gRPC and metrics servers bind.")
    grpc_port: int = setting("BG_GRPC_PORT", 0, "gRPC port (0 = any free port).", min=0, max=65535)
    metrics_port: int = setting(
        "BG_METRICS_PORT", 0, "Prometheus metrics HTTP port (0 = any free port).", min=0, max=65535
    )
    replica: str = setting("BG_REPLICA", "", "Replica name, e.g. table-2, for logs and metrics.")
    log_level: LogLevel = setting("BG_LOG_LEVEL", "INFO", "Log level.")
    log_format: LogFormat = setting("BG_LOG_FORMAT", "json", "json (one object a line) or text.")
    otel_exporter: OtelExporter = setting(
        "BG_OTEL_EXPORTER", "none", "Trace exporter: none (off), console or otlp."
    )
    otel_endpoint: str = setting(
        "BG_OTEL_ENDPOINT", "http://127.0.0.1:4317", "OTLP/gRPC collector for otlp traces."
    )
    shutdown_grace_s: float = setting(
        "BG_SHUTDOWN_GRACE_S", 5.0, "Seconds in-flight calls get to finish on shutdown.", min=0
    )
    shutdown_delay_s: float = setting(
        "BG_SHUTDOWN_DELAY_S",
        0.0,
        "Seconds between NOT_SERVING and closing the port (lets load balancers notice).",
        min=0,
    )
    readiness_timeout_s: float = setting(
        "BG_READINESS_TIMEOUT_S", 2.0, "Seconds a dependency check may take.", min=0.01
    )
    readiness_interval_s: float = setting(
        "BG_READINESS_INTERVAL_S", 2.0, "Seconds between dependency checks.", min=0.05
    )
    redis_cluster: bool = setting(
        "BG_REDIS_CLUSTER",
        False,
        "BG_REDIS_URL names a node of a Valkey/Redis Cluster (the client finds the others).",
    )
    redis_timeout_s: float = setting(
        "BG_REDIS_TIMEOUT_S",
        1.0,
        "Seconds a Redis/Valkey reply may take before the call is retried (3 times) and the "
        "cluster's slots are read again: a frozen or cut-off node keeps its sockets open, and "
        "without a limit a call to it waits forever, even after its replica took over.",
        min=0.05,
    )
    gc_young: int = setting(
        "BG_GC_YOUNG",
        5_000,
        "Allocations between young garbage collections (after start; the objects built at "
        "start are frozen out of the collector). bg_gc_pause_seconds shows what each costs.",
        min=100,
    )
    gc_freeze: bool = setting(
        "BG_GC_FREEZE",
        True,
        "Freeze what survives each middle (generation 1) collection out of the collector, as "
        "what start built is: later scans never walk the long-lived objects (cached table "
        "states, connections), so no collection pauses for their number. Cyclic garbage among "
        "them is never collected; bg_gc_frozen_objects shows how many are frozen.",
    )
    nice: int = setting(
        "BG_NICE",
        0,
        "CPU niceness the process (and its autogroup, when it leads its session as under "
        "bgcluster) takes at start: on a shared box the clock keepers first, batch work last. "
        "Below the current needs CAP_SYS_NICE; without it the process keeps its own.",
        min=-20,
        max=19,
    )
    event_loop: EventLoop = setting(
        "BG_EVENT_LOOP",
        "asyncio",
        "Event loop: asyncio or uvloop (gateway and table default to uvloop: measured faster).",
    )


def redis_url_setting() -> Any:
    return setting("BG_REDIS_URL", "redis://127.0.0.1:6379/0", "Redis/Valkey URL.", secret=False)


def peer_setting(peer: Peer) -> Any:
    """The setting that lists a peer's replicas (services/contracts/peers.py)."""
    return setting(peer.env, peer.default, peer.help)


def kafka_bootstrap_setting() -> Any:
    return setting(
        "BG_KAFKA_BOOTSTRAP", "127.0.0.1:9092", "Kafka bootstrap servers (host:port,...)."
    )


def kafka_namespace_setting() -> Any:
    return setting(
        "BG_KAFKA_NAMESPACE",
        "",
        "Prefix of this cluster's Kafka topics and consumer groups (NS.table-events, group "
        "NS.wallet), so clusters sharing a broker never share a group; empty: no prefix.",
        pattern=NAMESPACE_PATTERN,
    )


def kafka_idempotence_setting() -> Any:
    return setting(
        "BG_KAFKA_IDEMPOTENCE",
        False,
        "Idempotent Kafka producer (on in production; Tansu refuses it, so off locally).",
    )


def kafka_log_setting() -> Any:
    return setting(
        "BG_KAFKA_LOG",
        "kafka",
        "How events lie on the broker: kafka (production Kafka: one topic each, durable, "
        "retained, group-managed consumers) or embedded (a broker that may forget, Tansu on "
        "memory: topics in generations, history bounded, the outboxes replayed when it "
        "restarts; services/common/embedded_generations.py).",
    )


def kafka_rotate_setting() -> Any:
    return setting(
        "BG_KAFKA_ROTATE_S",
        60.0,
        "embedded log: seconds a topic generation is written (its history is a few of them).",
        min=0.5,
    )


def kafka_partitions_setting() -> Any:
    return setting(
        "BG_KAFKA_PARTITIONS",
        1,
        "embedded log: partitions of each generation (at least the replicas of a consumer).",
        min=1,
        max=64,
    )


def consumer_share_setting() -> Any:
    return setting(
        "BG_CONSUMER_SHARE",
        "0/1",
        "embedded log: this replica's share of its topics' partitions, i/n (it reads the "
        "partitions p with p % n == i).",
        pattern=r"\d{1,2}/\d{1,2}",
    )


def database_url_setting(default: str) -> Any:
    return setting("BG_DATABASE_URL", default, "SQLAlchemy async database URL.")


@dataclass(frozen=True)
class EventLogSettings(ServiceSettings):
    """Where the event log is and how its events lie: every service that writes or reads it."""

    kafka_bootstrap: str = kafka_bootstrap_setting()
    kafka_namespace: str = kafka_namespace_setting()
    kafka_log: KafkaLog = kafka_log_setting()
    kafka_rotate_s: float = kafka_rotate_setting()
    kafka_partitions: int = kafka_partitions_setting()


@dataclass(frozen=True)
class EventReaderSettings(EventLogSettings):
    """What a consumer of the event log (wallet, leaderboard, analysis) reads to find it."""

    consumer_share: str = consumer_share_setting()


@dataclass(frozen=True)
class EventWriterSettings(EventLogSettings):
    """What a producer of the event log (table, matchmaking) reads to find it and write to it."""

    kafka_idempotence: bool = kafka_idempotence_setting()
