"""Garbage-collector pauses: how long each collection stopped the process, by generation.

A full collection walks every tracked object: a table replica caching thousands of tables'
states pauses its loop (and every clock due meanwhile) for as long as that takes.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def watch(pauses: Any) -> Callable[[], None]:
    """Observe every collection's duration on `pauses` (a Histogram labelled by generation);
    returns the function that stops watching."""
    started = 0.0

    def callback(phase: str, info: dict[str, int]) -> None:
        nonlocal started
        if phase == "start":
            started = time.perf_counter()
        else:
            pauses.labels(str(info["generation"])).observe(time.perf_counter() - started)

    gc.callbacks.append(callback)
    return lambda: gc.callbacks.remove(callback)
