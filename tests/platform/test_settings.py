"""Settings: typed parsing from the environment, errors that name the variable."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from typing import Literal

import pytest

from services.common.settings import (
    ServiceSettings,
    SettingsError,
    describe,
    load,
    redacted,
    setting,
)
from services.contracts.topics import cluster_topics
from services.gateway.settings import GatewaySettings
from services.table.settings import load_settings as load_table
from services.wallet.settings import load_settings as load_wallet


@dataclass(frozen=True)
class Sample:
    port: int = setting("S_PORT", 10, "a port", min=0, max=65535)
    ratio: float = setting("S_RATIO", 1.0, "a ratio", min=0.001)
    flag: bool = setting("S_FLAG", False, "a flag")
    mode: Literal["a", "b"] = setting("S_MODE", "a", "a mode")
    names: tuple[str, ...] = setting("S_NAMES", (), "names")
    url: str = setting("S_URL", "redis://x", "a url")


def test_defaults_when_unset() -> None:
    s = load(Sample, {})
    assert s == Sample()


def test_values_parsed_by_type() -> None:
    s = load(
        Sample,
        {"S_PORT": " 8080", "S_RATIO": "0.25", "S_FLAG": "yes", "S_MODE": "b", "S_NAMES": "x, y,"},
    )
    assert (s.port, s.ratio, s.flag, s.mode, s.names) == (8080, 0.25, True, "b", ("x", "y"))


@pytest.mark.parametrize(
    ("env", "value", "expected"),
    [
        ("S_PORT", "eighty", "an integer"),
        ("S_PORT", "70000", "a value <= 65535"),
        ("S_PORT", "-1", "a value >= 0"),
        ("S_RATIO", "fast", "a number"),
        ("S_RATIO", "0", "a value >= 0.001"),
        ("S_FLAG", "maybe", "a boolean"),
        ("S_MODE", "c", "one of a, b"),
    ],
)
def test_bad_values_name_the_variable(env: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as err:
        load(Sample, {env: value})
    assert err.value.env == env
    assert str(err.value).startswith(f"{env}={value!r}: expected {expected}")


def test_settings_are_frozen() -> None:
    s = load(Sample, {})
    with pytest.raises(FrozenInstanceError):
        s.port = 1  # type: ignore[misc]


def test_service_defaults_and_overrides() -> None:
    gw = load(GatewaySettings, {})
    assert (gw.grpc_port, gw.metrics_port, gw.log_format, gw.otel_exporter) == (
        50051,
        9101,
        "json",
        "none",
    )
    table = load_table({"BG_GRPC_PORT": "0", "BG_REDIS_URL": "redis://h:1/2"})
    assert (table.grpc_port, table.redis_url) == (0, "redis://h:1/2")
    assert load_wallet({}).database_url.startswith("sqlite+aiosqlite:///")


def test_service_bad_exporter_is_refused() -> None:
    with pytest.raises(SettingsError, match="BG_OTEL_EXPORTER='jaeger': expected one of none"):
        load(ServiceSettings, {"BG_OTEL_EXPORTER": "jaeger"})


def test_redacted_masks_url_passwords() -> None:
    table = load_table({"BG_REDIS_URL": "redis://user:hunter2@h:6379/0"})
    shown = redacted(table)
    assert "hunter2" not in str(shown)
    assert shown["redis_url"] == "redis://user:***@h:6379/0"


def test_describe_lists_every_variable() -> None:
    names = [row[0] for row in describe(GatewaySettings)]
    assert "BG_GRPC_PORT" in names and "BG_REDIS_URL" in names and len(names) == len(set(names))


def test_kafka_namespace_prefixes_topics_and_groups_and_rejects_bad_names() -> None:
    """Clusters sharing a broker: BG_KAFKA_NAMESPACE prefixes every topic and group; the code and
    the outbox rows keep the logical names (the empty namespace is the plain names)."""
    from services.common.topics import Namespace
    from services.contracts.topics import TOPICS

    assert load_wallet({}).kafka_namespace == ""
    assert Namespace("").topic("table-events") == "table-events"
    ns = Namespace(load_wallet({"BG_KAFKA_NAMESPACE": "stage-1"}).kafka_namespace)
    assert (ns.topic("table-events"), ns.group("wallet")) == (
        "stage-1.table-events",
        "stage-1.wallet",
    )
    assert ns.logical("stage-1.wallet-events") == "wallet-events"
    assert cluster_topics(ns) == {f"stage-1.{t}": n for t, n in TOPICS.items()}
    for bad in ("a.b", "a b", "x" * 41, "ns/1"):
        with pytest.raises(SettingsError, match="BG_KAFKA_NAMESPACE"):
            load_table({"BG_KAFKA_NAMESPACE": bad})
