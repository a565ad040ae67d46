"""A capacity report of a run, from the cluster's Prometheus, asking it the overview dashboard's
own panel queries (k8s/base/dashboards/overview.json): one source of queries, so a report that
got data from every panel has shown the dashboard works on real numbers too.

From the panels it derives what an SRE sizes a deployment by: CPU cores and memory by service,
per 1,000 live tables and per 100 commands a second; commands a second and their p50/p99 at the
gateway; the clocks' lateness; streams and connections. Written as JSON and as a page of charts
over the run (matplotlib), beside the load test's own report."""

from __future__ import annotations

import base64
import html
import io
import json
import math
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[1] / "k8s" / "base" / "dashboards" / "overview.json"
STEP_S = 10


@dataclass(frozen=True)
class Query:
    panel: str
    expr: str
    legend: str
    unit: str


def panel_queries(dashboard: Path = DASHBOARD) -> list[Query]:
    """Every target of every panel of the dashboard, in its order."""
    found = json.loads(dashboard.read_text())
    return [
        Query(p["title"], t["expr"], t.get("legendFormat", ""), _unit(p))
        for p in found["panels"]
        for t in p["targets"]
    ]


def _unit(panel: dict[str, Any]) -> str:
    return str(panel.get("fieldConfig", {}).get("defaults", {}).get("unit", ""))


def query_range(prometheus: str, expr: str, start: float, end: float) -> list[dict[str, Any]]:
    """A range query's series: each its labels and [(unix s, value)]."""
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": STEP_S})
    url = f"{prometheus.rstrip('/')}/api/v1/query_range?{params}"
    with urllib.request.urlopen(url, timeout=30) as reply:
        found = json.loads(reply.read())
    if found.get("status") != "success":
        raise RuntimeError(f"Prometheus refused {expr!r}: {found.get('error')}")
    return [
        {"labels": s["metric"], "values": [(float(t), float(v)) for t, v in s["values"]]}
        for s in found["data"]["result"]
    ]


def _name(series: dict[str, Any], legend: str) -> str:
    if not legend:
        return ",".join(f"{k}={v}" for k, v in sorted(series["labels"].items())) or "value"
    return legend.replace("{{", "{").replace("}}", "}").format_map(_Missing(series["labels"]))


class _Missing(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _mean(values: list[tuple[float, float]]) -> float:
    finite = [v for _, v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else 0.0


def _max(values: list[tuple[float, float]]) -> float:
    return max((v for _, v in values if math.isfinite(v)), default=0.0)


def collect(prometheus: str, start: float, end: float) -> dict[str, Any]:
    """Every panel query over [start, end], and the figures derived from them."""
    panels: dict[str, list[dict[str, Any]]] = {}
    empty = []
    for q in panel_queries():
        series = query_range(prometheus, q.expr, start, end)
        if not series:
            empty.append(f"{q.panel}: {q.expr}")
        panels.setdefault(q.panel, []).extend(
            {"query": q.expr, "name": _name(s, q.legend), "unit": q.unit, "values": s["values"]}
            for s in series
        )
    return {
        "prometheus": prometheus,
        "start": start,
        "end": end,
        "step_s": STEP_S,
        "queries_without_data": empty,
        "derived": derive(panels),
        "panels": panels,
    }


def _series(panels: dict[str, list[dict[str, Any]]], panel: str) -> dict[str, Any]:
    return {s["name"]: s["values"] for s in panels.get(panel, [])}


def derive(panels: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The sizing figures: means over the run (peaks for memory, lateness and latency's p99)."""
    tables = sum(_mean(v) for v in _series(panels, "Live tables").values())
    commands = sum(_mean(v) for v in _series(panels, "Gateway: Play commands per second").values())
    latency = _series(panels, "Gateway: Play command latency p50 / p99")
    lateness = _series(panels, "Clock lateness p50 / p99")
    cpu = {k: _mean(v) for k, v in _series(panels, "CPU by service (cores)").items()}
    memory = {k: _max(v) for k, v in _series(panels, "Memory by service").items()}
    streams = _series(panels, "Gateway: streams and WebSocket connections")
    per_k = 1000 / tables if tables else 0.0
    per_100 = 100 / commands if commands else 0.0
    return {
        "live_tables": round(tables, 1),
        "commands_per_s": round(commands, 1),
        "command_ms": {
            "p50": round(1000 * _mean(latency.get("p50", [])), 1),
            "p99": round(1000 * _mean(latency.get("p99", [])), 1),
            "p99_worst_window": round(1000 * _max(latency.get("p99", [])), 1),
        },
        "clock_lateness_ms": {
            "p50": round(1000 * _mean(lateness.get("p50", [])), 1),
            "p99_worst_window": round(1000 * _max(lateness.get("p99", [])), 1),
        },
        "streams": {k: round(_mean(v), 1) for k, v in streams.items()},
        "cpu_cores": {k: round(v, 3) for k, v in sorted(cpu.items())},
        "memory_mb": {k: round(v / 2**20, 1) for k, v in sorted(memory.items())},
        "cpu_cores_per_1000_tables": {k: round(v * per_k, 3) for k, v in sorted(cpu.items())},
        "memory_mb_per_1000_tables": {
            k: round(v / 2**20 * per_k, 1) for k, v in sorted(memory.items())
        },
        "cpu_cores_per_100_commands_per_s": {
            k: round(v * per_100, 3) for k, v in sorted(cpu.items())
        },
    }


def write(report: dict[str, Any], out: Path) -> Path:
    """capacity.json and capacity.html (a chart per panel, over the run) in `out`."""
    (out / "capacity.json").write_text(json.dumps(report, indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    start = report["start"]
    parts = [
        "<!doctype html><meta charset=utf-8><title>Capacity report</title>",
        "<style>body{font:14px sans-serif;max-width:1100px;margin:2em auto}"
        "img{width:100%}pre{background:#f4f4f4;padding:1em}</style>",
        "<h1>Capacity report</h1>",
        f"<p>From {html.escape(report['prometheus'])}, {round(report['end'] - start)} s, "
        "the overview dashboard's panel queries.</p>",
        "<h2>Sizing</h2><pre>" + html.escape(json.dumps(report["derived"], indent=1)) + "</pre>",
    ]
    if report["queries_without_data"]:
        missing = "".join(f"<li>{html.escape(q)}" for q in report["queries_without_data"])
        parts.append(f"<h2>Panels without data</h2><ul>{missing}</ul>")
    for panel, series in report["panels"].items():
        fig, ax = plt.subplots(figsize=(10, 3))
        for s in series:
            points = [(t - start, v) for t, v in s["values"] if math.isfinite(v)]
            if points:
                ax.plot(*zip(*points, strict=True), label=s["name"] or "value")
        ax.set_title(panel)
        ax.set_xlabel("seconds into the run")
        unit = series[0]["unit"] if series else ""
        ax.set_ylabel(unit if unit not in ("none", "") else "")
        if len(series) > 1:
            ax.legend(fontsize="small", ncol=3)
        buffer = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buffer, format="png", dpi=80)
        plt.close(fig)
        data = base64.b64encode(buffer.getvalue()).decode()
        parts.append(f"<h2>{html.escape(panel)}</h2><img src='data:image/png;base64,{data}'>")
    page = out / "capacity.html"
    page.write_text("\n".join(parts))
    return page
