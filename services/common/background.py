"""A service's background loops (relays, consumers, sweepers, gauges): started once its port is
bound, stopped by the host after the server has drained and before the clients they use close."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from services.common.backoff import pause

GRACE_S = 5.0  # a loop's time to finish after `stop` is set; then it is cancelled


class Background:
    def __init__(self) -> None:
        self.stop = asyncio.Event()
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
        log: logging.Logger | None = None,
    ) -> None:
        """Run `step` every `interval_s` until stopped. A step that fails (a store down) is
        logged when `log` is given and the next one runs on time."""
        self.spawn(name, every(interval_s, step, self.stop, log, name))

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
    log: logging.Logger | None = None,
    name: str = "",
) -> None:
    while not stop.is_set():
        try:
            await step()
        except Exception as exc:
            if log is not None:
                log.warning(f"{name} failed", extra={"error": repr(exc)[:300]})
        await pause(stop, interval_s)
