"""Waiting between retries, one policy for every loop that talks to Kafka, Redis or SQL: after
each failure twice the last delay (from `base_s`, at most `cap_s`), with jitter so replicas that
failed together do not retry together; back to `base_s` after a success."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable


async def pause(stop: asyncio.Event, seconds: float) -> None:
    """Sleep `seconds`, or less if `stop` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


class Backoff:
    def __init__(
        self, base_s: float, cap_s: float = 5.0, rng: Callable[[], float] = random.random
    ) -> None:
        self.base_s = base_s
        self.cap_s = cap_s
        self.rng = rng
        self._next = base_s

    def reset(self) -> None:
        self._next = self.base_s

    def failed(self) -> float:
        """The delay before the next attempt: half the step fixed, half random (equal jitter)."""
        step = min(self._next, self.cap_s)
        self._next = min(step * 2, self.cap_s)
        return step / 2 + self.rng() * step / 2
