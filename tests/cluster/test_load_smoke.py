"""A ~20 s smoke of the Locust load test (issue 8) as a newcomer's `make load` runs it: a local
cluster it starts, players, adversaries and idle players on a Locust master and its worker, one
table replica killed and restarted; zero correctness failures, every diamond it granted through
the operators' API accounted for, Locust's report written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_load_smoke_with_chaos(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loadtests.run", "--users", "8", "--spawn-rate", "8",
         "--duration", "20", "--chaos", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.stdout, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["failed"] == [], summary
    assert all(count == 0 for count in summary["checks"].values())
    assert summary["matches_completed"] > 0 and summary["commands_total"] > 0
    assert summary["clock_lateness_ms"].get("count", 0) > 0, summary  # idle tables timed out
    assert summary["refusals"]["errors"] == {} and summary["diamonds"]["granted"] == 800_000
    assert (tmp_path / "report.html").exists() and (tmp_path / "summary.json").exists()
    assert done.returncode == 0
