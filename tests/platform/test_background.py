"""A background loop's failing step is logged and counted, and the loop goes on."""

from __future__ import annotations

import asyncio
import logging

import pytest

from services.common.background import Background
from services.common.metrics import ServiceMetrics


async def test_a_failing_step_is_logged_counted_and_the_next_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = ServiceMetrics("wallet")
    background = Background(metrics.background_failed)
    runs: list[int] = []
    done = asyncio.Event()

    async def audit() -> None:
        runs.append(len(runs))
        if len(runs) <= 2:
            raise ConnectionError("the ledger's database is down")
        done.set()

    with caplog.at_level(logging.WARNING, "bg.background"):
        background.every("audit", 0.0, audit)  # no logger given: still logged
        await asyncio.wait_for(done.wait(), 5)
        await background.close()
    assert len(runs) >= 3
    failures = metrics.registry.get_sample_value(
        "bg_background_step_failures_total", {"service": "wallet", "loop": "audit"}
    )
    assert failures == 2
    logged = [r for r in caplog.records if r.getMessage() == "audit failed"]
    assert len(logged) == 2
    assert "database is down" in logged[0].__dict__["error"]
