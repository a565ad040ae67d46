"""How late the event loop runs what is due, and why: busy (Python held it) or waiting (the
process had no core, or sat in a system call).

A deadline, a reply or a renewal due at t runs at t + lag. A probe sleeps PROBE_S and measures
its overshoot; for a stall (an overshoot past STALL_S) the main thread's CPU over that sleep
says which it was: a loop that ran Python for most of it was busy (a long step: a sweep, a
collection, a big reply); one that did not was waiting for a core. Those call for different
cures (cut the step, or give the process a core), which a lateness histogram alone cannot tell.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

PROBE_S = 0.05
STALL_S = 0.02  # an overshoot past this is a stall (issue 43: a deadline's goal is 50 ms at p99)
BUSY = 0.5  # a stall is "busy" when the thread ran Python for at least this share of its span


async def watch(stop: asyncio.Event, lag: Any, stalls: Any) -> None:
    """Until `stop`: observe each probe's overshoot on `lag` (a Histogram), and count stalls on
    `stalls` (a Counter labelled by cause: busy or waiting)."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        started, cpu = loop.time(), time.thread_time()
        await asyncio.sleep(PROBE_S)
        span = loop.time() - started
        overshoot = max(0.0, span - PROBE_S)
        lag.observe(overshoot)
        if overshoot > STALL_S:
            ran = time.thread_time() - cpu
            stalls.labels("busy" if ran >= BUSY * span else "waiting").inc()
