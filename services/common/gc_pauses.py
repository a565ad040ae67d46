"""Garbage-collector pauses: how long each collection stopped the process, by generation.

A full collection walks every tracked object: a table replica caching thousands of tables'
states pauses its loop (and every clock due meanwhile) for as long as that takes.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def watch(pauses: Any, cpu: Any | None = None) -> Callable[[], None]:
    """Observe every collection's duration on `pauses` and its thread's CPU on `cpu` (Histograms
    labelled by generation); returns the function that stops watching."""
    started = started_cpu = 0.0

    def callback(phase: str, info: dict[str, int]) -> None:
        nonlocal started, started_cpu
        if phase == "start":
            started, started_cpu = time.perf_counter(), time.thread_time()
            return
        generation = str(info["generation"])
        pauses.labels(generation).observe(time.perf_counter() - started)
        if cpu is not None:
            cpu.labels(generation).observe(time.thread_time() - started_cpu)

    gc.callbacks.append(callback)
    return lambda: gc.callbacks.remove(callback)
