"""A service's background loops (relays, consumers, sweepers, gauges): started once its port is
bound, stopped by the host after the server has drained and before the clients they use close."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from services.common.backoff import pause

GRACE_S = 5.0  # a loop's time to finish after `stop` is set; then it is cancelled
log = logging.getLogger("bg.background")


class Background:
    """`failed(step)` is told of each step of an `every` loop that raised (the service's counter
    of them), so a failing step (an audit, a sweep) shows on a dashboard, not only in logs."""

    def __init__(self, failed: Callable[[str], None] | None = None) -> None:
        self.stop = asyncio.Event()
        self.failed = failed
        self._tasks: list[asyncio.Task[None]] = []

    def spawn(self, name: str, loop: Awaitable[None]) -> None:
        """Run `loop` (one that returns once `self.stop` is set) as a named task."""
        self._tasks.append(asyncio.ensure_future(loop))
        self._tasks[-1].set_name(name)

    def every(
        self,
        name: str,
        interval_s: float,
        step: Callable[[], Awaitable[object]],
        logger: logging.Logger = log,
    ) -> None:
        """Run `step` every `interval_s` until stopped. A step that fails (a store down) is
        logged (on `logger`) and counted, and the next one runs on time."""
        self.spawn(name, every(interval_s, step, self.stop, logger, name, self.failed))

    async def close(self) -> None:
        self.stop.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, GRACE_S)
        self._tasks.clear()


async def every(
    interval_s: float,
    step: Callable[[], Awaitable[object]],
    stop: asyncio.Event,
    logger: logging.Logger = log,
    name: str = "",
    failed: Callable[[str], None] | None = None,
) -> None:
    while not stop.is_set():
        try:
            await step()
        except Exception as exc:
            logger.warning(f"{name} failed", extra={"error": repr(exc)[:300]})
            if failed is not None:
                failed(name)
        await pause(stop, interval_s)
