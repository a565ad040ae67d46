"""The one wall clock of the services: unix milliseconds. Code that needs time injected takes a
`Clock` (a callable) defaulting to `now_ms`, so a test can hold time still.

`BG_CLOCK_SKEW_MS` (operators' drills and the fault tests, issue 42) skews this process's wall
clock by that many milliseconds, as a machine whose time sync failed would be. The table
service's clocks do not use it: they run on the store's clock (services/table/store_clock.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import cache

Clock = Callable[[], int]


@cache
def skew_ms() -> int:
    """This process's wall-clock skew, read once, when first asked for."""
    return int(os.environ.get("BG_CLOCK_SKEW_MS", "0") or 0)


def now_ms() -> int:
    return time.time_ns() // 1_000_000 + skew_ms()
