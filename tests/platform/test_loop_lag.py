"""services/common/loop_lag.py: a held event loop shows as lag, and a stall is told apart by its
cause: Python running (busy) or the thread not running (waiting)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from services.common import loop_lag


class Observed:
    def __init__(self) -> None:
        self.values: list[float] = []

    def observe(self, value: float) -> None:
        self.values.append(value)


class Stalls:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def labels(self, cause: str) -> Stalls:
        self._cause = cause
        return self

    def inc(self) -> None:
        self.counts[self._cause] += 1


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def test_stalls_are_counted_by_cause() -> None:
    lag, stalls, stop = Observed(), Stalls(), asyncio.Event()
    watcher = asyncio.create_task(loop_lag.watch(stop, lag, stalls))
    await asyncio.sleep(0.01)  # a probe is asleep
    time.sleep(0.3)  # noqa: ASYNC251 - the loop held, no Python running: as if without a core
    await asyncio.sleep(0.01)
    assert stalls.counts == {"waiting": 1}
    started = time.monotonic()
    _spin(0.3)  # the loop held by Python: a long step
    share = 0.3 / (time.monotonic() - started)  # of a core the spin got (tests share the box)
    await asyncio.sleep(0.01)
    stop.set()
    await watcher
    if share >= 0.6:  # Python ran most of the stall: busy
        assert stalls.counts == {"waiting": 1, "busy": 1}
    elif share <= 0.4:  # the process mostly had no core, even while spinning: waiting
        assert stalls.counts == {"waiting": 2}
    else:  # about half: either, but one stall
        assert stalls.counts.total() == 2
    assert sorted(lag.values)[-2] > 0.2  # both stalls were observed as lag, well past 20 ms
