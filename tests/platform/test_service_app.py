"""A service's composition root registers each resource's close where it makes it
(services/common/service.py): the host closes them last made first, and one close that fails is
logged while the rest still run (a Redis client that fails to close must not leave the SQL
engine open)."""

from __future__ import annotations

import logging

import pytest

from services.common.service import ServiceApp
from services.common.settings import ServiceSettings


async def test_closes_run_last_made_first_and_a_failing_one_stops_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = ServiceApp("demo", ServiceSettings(), metrics=None)  # type: ignore[arg-type]
    closed: list[str] = []

    def closer(name: str, fail: bool = False):  # type: ignore[no-untyped-def]
        async def close() -> None:
            closed.append(name)
            if fail:
                raise RuntimeError(f"{name} would not close")

        close.__qualname__ = f"close_{name}"
        return close

    app.closes(closer("engine"))
    app.closes(closer("redis", fail=True))
    app.closes(closer("channel"))
    with caplog.at_level(logging.ERROR, logger="bg.host"):
        await app.resources.aclose()
    assert closed == ["channel", "redis", "engine"]
    failed = [r for r in caplog.records if r.getMessage() == "error while closing"]
    assert [getattr(r, "close", "") for r in failed] == ["close_redis"]
