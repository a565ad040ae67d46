"""Alert rules pass promtool's unit tests; dashboards and alerts name only metrics the services
really export (issue 9)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "infra" / "prometheus"
GRAFANA = ROOT / "k8s" / "base" / "dashboards"
BUILTIN = {"up"}


def exported_metrics() -> set[str]:
    """Every sample name the services' metric objects export (built as the services build them)."""
    from services.analysis.metrics import AnalysisMetrics
    from services.common.metrics import ServiceMetrics
    from services.gateway.metrics import GatewayMetrics
    from services.leaderboard.metrics import LeaderboardMetrics
    from services.matchmaking.metrics import TournamentMetrics
    from services.table.metrics import TableMetrics
    from services.wallet.metrics import WalletMetrics

    base = ServiceMetrics("any", CollectorRegistry())
    TableMetrics(base)
    WalletMetrics(base)
    LeaderboardMetrics(base.registry)
    AnalysisMetrics(base.registry)
    GatewayMetrics(base.registry)
    TournamentMetrics(base)
    names: set[str] = set()
    for family in base.registry.collect():
        if family.type == "counter":
            names |= {family.name + "_total", family.name + "_created"}
        elif family.type == "histogram":
            names |= {family.name + s for s in ("_bucket", "_count", "_sum", "_created")}
        else:
            names.add(family.name)
    return names


def queried(text: str) -> set[str]:
    return set(re.findall(r"\b(bg_[a-z0-9_]+|process_[a-z0-9_]+|up)\b", text))


def test_dashboards_query_only_exported_metrics() -> None:
    exported = exported_metrics() | BUILTIN
    for path in sorted(GRAFANA.glob("*.json")):
        dashboard = json.loads(path.read_text())
        exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
        assert exprs, path
        used = set().union(*(queried(e) for e in exprs))
        assert used and used <= exported, (path.name, sorted(used - exported))


def test_alert_rules_use_only_exported_metrics() -> None:
    exported = exported_metrics() | BUILTIN
    rules = yaml.safe_load((PROM / "alerts.yml").read_text())["groups"][0]["rules"]
    assert {r["alert"] for r in rules} >= {
        "ClockLate", "RejectedCommandsSpike", "RelayLagging", "WalletInvariantBreach",
        "LeaderboardConsumerLag", "ServiceDown",
    }  # fmt: skip
    for rule in rules:
        assert queried(rule["expr"]) <= exported, rule["alert"]
        assert rule["annotations"]["description"]


def test_dashboards_cover_what_operators_watch() -> None:
    text = " ".join(p.read_text() for p in GRAFANA.glob("*.json"))
    watched = (
        "bg_table_live_tables", "bg_table_commands_total", "bg_grpc_server_handling_seconds_bucket",
        "bg_table_clock_lateness_seconds_bucket", "bg_table_timeouts_total",
        "bg_wallet_escrowed_diamonds", "bg_wallet_fees_diamonds_total",
        "bg_wallet_match_closings_total", "bg_leaderboard_consumer_lag",
        "bg_gateway_streams", "bg_gateway_ws_connections",
    )  # fmt: skip
    for metric in watched:
        assert metric in text


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (.ci/run installs it)"
)
def test_promtool_rule_unit_tests() -> None:
    check = subprocess.run(
        ["promtool", "check", "rules", "alerts.yml"], cwd=PROM, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    tests = subprocess.run(
        ["promtool", "test", "rules", "alerts_test.yml"], cwd=PROM, capture_output=True, text=True
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "SUCCESS" in tests.stdout
