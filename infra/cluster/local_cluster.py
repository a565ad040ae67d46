"""A whole local cluster as one child process (`bgcluster up --base-port 0`), for load tests and
benchmarks; and CPU time per process from /proc, which is steadier than throughput on a noisy
machine."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from infra.cluster.processes import spawn

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15)


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


class TreeCpu:
    """CPU seconds used by a process tree whose members come and go (e.g. Locust's workers):
    `sample()` now and then remembers each member's latest total."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, float] = {}

    def sample(self) -> float:
        for pid in descendants(self.root):
            used = cpu_seconds(pid)
            if used:
                self.seen[pid] = max(self.seen.get(pid, 0.0), used)
        return sum(self.seen.values())


def cpu_of(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def metrics_page(url: str) -> str:
    """A /metrics page's text ("" when unreachable)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return str(reply.read().decode())
    except OSError:
        return ""


def scrape_total(url: str, metric: str) -> float:
    """The sum of every sample of `metric` a /metrics page exports (0 when unreachable)."""
    total = 0.0
    for line in metrics_page(url).splitlines():
        if line.startswith(metric + "{") or line.startswith(metric + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


class RunningCluster:
    """A started `bgcluster up`, as its state file (cluster.json) describes it."""

    def __init__(self, data: Path, state: dict[str, Any]) -> None:
        self.data = data
        self.state = state

    def address(self, name: str) -> str:
        return str(next(s["address"] for s in self.state["services"] if s["name"] == name))

    @property
    def pids(self) -> dict[str, int]:
        """Every process of the cluster (services and infrastructure) by instance name."""
        out = {s["instance"]: s["pid"] for s in self.state["services"] if s.get("pid")}
        out |= {p["name"]: p["pid"] for p in self.state.get("infra", []) if p.get("pid")}
        return out

    def round_trips(self) -> float:
        """Redis round trips counted by every service so far."""
        return sum(
            scrape_total(s["metrics"], "bg_redis_round_trips_total") for s in self.state["services"]
        )


@contextmanager
def local_cluster(
    data: Path, env: dict[str, str], *args: str, timeout_s: float = 90.0
) -> Iterator[RunningCluster]:
    """Start `bgcluster up` in `data`, yield once every service is SERVING, stop it after."""
    bgcluster = str(Path(sys.executable).parent / "bgcluster")
    proc = spawn(
        [bgcluster, "up", "--base-port", "0", "--data-dir", str(data), *args],
        data / "cluster.log",
        {**os.environ, **env},
        append=False,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not (
            (data / "cluster.json").exists()
            and "all services SERVING" in (data / "cluster.log").read_text()
        ):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((data / "cluster.log").read_text()[-3000:])
            time.sleep(0.1)
        yield RunningCluster(data, json.loads((data / "cluster.json").read_text()))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
