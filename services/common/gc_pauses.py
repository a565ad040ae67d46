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


def freeze_survivors() -> Callable[[], None]:
    """After each collection of generation 1 or 2, freeze what survived it (`gc.freeze`, as a
    service does with what its start built): the long-lived objects (a table replica's cached
    states, connections, caches) then never enter a scan again, and no collection's pause grows
    with their number. Right after such a collection the younger generations are empty, so only
    survivors are frozen; a frozen object freed by its reference count goes as usual, and only
    cyclic garbage among frozen objects is never collected. Returns the function that stops."""

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] >= 1:
            gc.freeze()

    gc.callbacks.append(callback)
    return lambda: gc.callbacks.remove(callback)
