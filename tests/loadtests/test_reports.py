"""The load test's reports (issue 59): every refusal counted by method and code, a rule's answer
apart from errors with the rule that makes it one, the gateway's rate limit apart from both; and
the capacity report's queries are the overview dashboard's own, its sizing derived from them."""

from __future__ import annotations

import json
from pathlib import Path

from loadtests import capacity
from loadtests.failures import RULE_ANSWERS, by_code, code_of, kind_of, read_failures
from loadtests.summary import summarize


def test_codes_sort_into_errors_rules_and_the_rate_limit() -> None:
    assert kind_of("TIME_UP") == kind_of("FAILED_PRECONDITION IN_ANOTHER_MATCH") == "rule"
    assert kind_of("RESOURCE_EXHAUSTED RATE_LIMITED") == "limited"
    assert kind_of("UNAVAILABLE UPSTREAM_UNAVAILABLE") == kind_of("INTERNAL") == "error"
    assert code_of(ValueError("x")) == "ValueError"


def test_the_summary_names_every_failure_by_method_and_code(tmp_path: Path) -> None:
    failures = tmp_path / "locust_failures.csv"
    failures.write_text(
        "Method,Name,Error,Occurrences\n"
        "cmd,submit_play,UNAVAILABLE UPSTREAM_UNAVAILABLE,3\n"
        "grpc,/bg.gateway.v1.GatewayService/QuickMatch,DEADLINE_EXCEEDED,1\n"
        "check,legal_refused,AAAA 3-1 ILLEGAL_STEP,2\n"  # a counter's: the checks, not here
    )
    stats = [
        {"method": "rule", "name": "submit_play TIME_UP", "num_requests": 4,
         "num_failures": 0, "response_times": {}},
        {"method": "limited", "name": "QuickMatch RESOURCE_EXHAUSTED RATE_LIMITED",
         "num_requests": 2, "num_failures": 0, "response_times": {}},
        {"method": "cmd", "name": "submit_play", "num_requests": 100, "num_failures": 3,
         "response_times": {"10": 90, "200": 10}},
        {"method": "check", "name": "legal_refused", "num_requests": 50, "num_failures": 2,
         "response_times": {}},
    ]  # fmt: skip
    found = summarize(stats, read_failures(failures))
    refusals = found["refusals"]
    assert refusals["errors"] == {
        "submit_play UNAVAILABLE UPSTREAM_UNAVAILABLE": 3, "QuickMatch DEADLINE_EXCEEDED": 1,
    }  # fmt: skip
    assert refusals["rules"] == {"submit_play TIME_UP": 4}
    assert refusals["rules_explained"] == {"TIME_UP": RULE_ANSWERS["TIME_UP"]}
    assert refusals["limited"] == {"QuickMatch RESOURCE_EXHAUSTED RATE_LIMITED": 2}
    assert found["errors"] == 4 and found["checks"]["legal_refused"] == 2
    assert found["commands"]["submit_play"]["p99_ms"] == 200.0
    assert by_code([], []) == {"errors": {}, "rules": {}, "limited": {}, "rules_explained": {}}


def test_the_capacity_reports_queries_are_the_overview_dashboards() -> None:
    dashboard = json.loads(capacity.DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert [q.expr for q in capacity.panel_queries()] == exprs
    titles = {q.panel for q in capacity.panel_queries()}
    assert {"CPU by service (cores)", "Memory by service", "Live tables",
            "Gateway: Play commands per second"} <= titles  # fmt: skip


def test_sizing_per_thousand_tables_and_per_hundred_commands() -> None:
    def flat(value: float) -> list[tuple[float, float]]:
        return [(0.0, value), (10.0, value), (20.0, float("nan"))]

    panels = {
        "Live tables": [{"name": "tables", "values": flat(2000)}],
        "Gateway: Play commands per second": [{"name": "commands", "values": flat(400)}],
        "CPU by service (cores)": [
            {"name": "table", "values": flat(0.5)}, {"name": "analysis", "values": flat(0.2)},
        ],
        "Memory by service": [{"name": "table", "values": flat(200 * 2**20)}],
        "Gateway: Play command latency p50 / p99": [
            {"name": "p50", "values": flat(0.004)}, {"name": "p99", "values": flat(0.050)},
        ],
    }  # fmt: skip
    derived = capacity.derive(panels)
    assert derived["live_tables"] == 2000 and derived["commands_per_s"] == 400
    assert derived["cpu_cores_per_1000_tables"] == {"analysis": 0.1, "table": 0.25}
    assert derived["cpu_cores_per_100_commands_per_s"] == {"analysis": 0.05, "table": 0.125}
    assert derived["memory_mb_per_1000_tables"] == {"table": 100.0}
    assert derived["command_ms"] == {"p50": 4.0, "p99": 50.0, "p99_worst_window": 50.0}
