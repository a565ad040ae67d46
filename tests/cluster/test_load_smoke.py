"""A ~20 s smoke of the Locust load test (issue 8): a cluster, players, adversaries and idle
players, one table replica killed and restarted; zero correctness failures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


def test_load_smoke_with_chaos() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loadtests.run", "--users", "8", "--spawn-rate", "8",
         "--duration", "20", "--chaos"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.stdout, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["failed"] == [], summary
    assert all(count == 0 for count in summary["checks"].values())
    assert summary["matches_completed"] > 0 and summary["commands_total"] > 0
    assert summary["clock_lateness_ms"].get("count", 0) > 0, summary  # idle tables timed out
    assert done.returncode == 0
