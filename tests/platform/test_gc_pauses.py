"""Every garbage collection's pause reaches bg_gc_pause_seconds, by generation; stopping the
watch removes its callback."""

from __future__ import annotations

import gc
import weakref

from prometheus_client import CollectorRegistry

from services.common import gc_pauses
from services.common.metrics import ServiceMetrics


def _count(registry: CollectorRegistry, generation: str) -> float:
    value = registry.get_sample_value("bg_gc_pause_seconds_count", {"generation": generation})
    return value or 0.0


def test_a_full_collection_is_observed_once_and_the_watch_can_stop() -> None:
    registry = CollectorRegistry()
    metrics = ServiceMetrics("any", registry)
    callbacks = len(gc.callbacks)
    stop = gc_pauses.watch(metrics.gc_pause_seconds, metrics.gc_cpu_seconds)
    try:
        before = _count(registry, "2")
        gc.collect()
        assert _count(registry, "2") == before + 1
        total = registry.get_sample_value("bg_gc_pause_seconds_sum", {"generation": "2"})
        assert total is not None and total > 0
        cpu = registry.get_sample_value("bg_gc_cpu_seconds_count", {"generation": "2"})
        assert cpu == before + 1  # the collector's CPU beside its pause
    finally:
        stop()
    assert len(gc.callbacks) == callbacks
    gc.collect()
    assert _count(registry, "2") == before + 1  # no longer watched


def _scanned() -> set[int]:
    """The ids of the objects the collector still scans (a frozen one is in none of its
    generations)."""
    return {id(o) for o in gc.get_objects()}


def test_what_survives_a_middle_collection_is_frozen_and_young_garbage_is_not() -> None:
    """BG_GC_FREEZE: survivors of a generation-1 collection leave the collector's scans; cyclic
    garbage still young at that moment is collected first, never frozen. Checked object by
    object: counts of frozen objects depend on what the process froze before (another test's
    app) and on whether an instance's dict is an object of its own (not on Python 3.11+)."""

    class Node:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the collector frees it

    gc.collect()
    stop = gc_pauses.freeze_survivors()
    # Only the collections below: an automatic one set off by another thread's allocations (an
    # xdist worker's) would freeze what the test means to find young.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        kept = [Node() for _ in range(1000)]  # long-lived, tracked
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage  # young cyclic garbage
        assert {id(n) for n in kept} <= _scanned()  # young: scanned before the collection
        gc.collect(1)
        assert gone() is None  # collected, not frozen
        scanned = _scanned()
        assert not any(id(n) in scanned for n in kept)  # every survivor frozen
        young = Node()
        gc.collect(0)  # a young collection freezes nothing
        assert id(young) in _scanned()
    finally:
        stop()
        gc.unfreeze()
        if was_enabled:
            gc.enable()
    gc.collect(1)
    assert gc.get_freeze_count() == 0  # stopped: nothing frozen any more
