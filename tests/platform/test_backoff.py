"""One retry policy for every loop (issue 17): doubling to a cap, jittered, reset by a success."""

from __future__ import annotations

import asyncio

from services.common.backoff import Backoff, pause


def test_delays_double_to_the_cap_within_their_jitter_and_reset_after_a_success() -> None:
    low, high = Backoff(0.5, cap_s=4.0, rng=lambda: 0.0), Backoff(0.5, cap_s=4.0, rng=lambda: 1.0)
    assert [low.failed() for _ in range(6)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert [high.failed() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    high.reset()
    assert high.failed() == 0.5


def test_pause_ends_early_when_stopped() -> None:
    async def run() -> bool:
        stop = asyncio.Event()
        stop.set()
        await asyncio.wait_for(pause(stop, 3600), 5)  # returns at once: stop is set
        return True

    assert asyncio.run(run())
