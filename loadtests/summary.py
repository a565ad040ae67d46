"""A run's summary from Locust's statistics: the correctness counters, the commands with their
latencies, the clocks' lateness, what the simulated people did, and every refusal by code
(loadtests/failures.py)."""

from __future__ import annotations

from typing import Any

from loadtests.failures import by_code

CHECKS = (
    "disagreement",
    "legal_refused",
    "illegal_accepted",
    "missed_timeout",
    "doubled_timeout",
    "early_timeout",
    "late_beyond_bound",
    "stream_gap",
)


def percentile(histogram: dict[str, int], q: float) -> float:
    """A percentile from Locust's response-time histogram (rounded buckets -> counts)."""
    items = sorted((float(k), v) for k, v in histogram.items())
    total = sum(v for _, v in items)
    if not total:
        return 0.0
    seen = 0
    for value, count in items:
        seen += count
        if seen >= q * total:
            return value
    return items[-1][0]


def summarize(stats: list[dict[str, Any]], failures: list[dict[str, Any]]) -> dict[str, Any]:
    by = {(s["method"], s["name"]): s for s in stats}
    out: dict[str, Any] = {"checks": {}, "commands": {}, "clock_lateness_ms": {}, "people": {}}
    for name in CHECKS:
        s = by.get(("check", name))
        out["checks"][name] = s["num_failures"] if s else 0
    completed = by.get(("check", "match_completed"))
    out["matches_completed"] = completed["num_requests"] if completed else 0
    commands = 0
    lateness: dict[str, int] = {}
    by_clock: dict[str, int] = {}
    for (method, name), s in by.items():
        if method == "cmd" and not name.startswith("junk_"):
            commands += s["num_requests"]
            out["commands"][name] = {
                "count": s["num_requests"],
                "p50_ms": percentile(s["response_times"], 0.5),
                "p99_ms": percentile(s["response_times"], 0.99),
                "errors": s["num_failures"],
            }
        elif method == "clock":
            for k, v in s["response_times"].items():
                lateness[k] = lateness.get(k, 0) + v
            by_clock[name.removeprefix("lateness:")] = s["num_requests"]
        elif method == "human":
            out["people"][name] = s["num_requests"]
    out["commands_total"] = commands
    if lateness:
        out["clock_lateness_ms"] = {
            "count": sum(lateness.values()),
            "p50": percentile(lateness, 0.5),
            "p99": percentile(lateness, 0.99),
            "max": max(float(k) for k in lateness),
            "by_clock": by_clock,
        }
    out["refusals"] = by_code(stats, failures)
    out["errors"] = sum(out["refusals"]["errors"].values())
    return out
