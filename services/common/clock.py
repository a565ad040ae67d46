"""The one wall clock of the services: unix milliseconds. Code that needs time injected takes a
`Clock` (a callable) defaulting to `now_ms`, so a test can hold time still."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000
