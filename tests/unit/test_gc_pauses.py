"""Every garbage collection's pause reaches bg_gc_pause_seconds, by generation; stopping the
watch removes its callback."""

from __future__ import annotations

import gc

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
