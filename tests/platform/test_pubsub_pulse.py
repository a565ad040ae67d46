"""services/common/pubsub_pulse.py: a quiet subscription pings once, and a ping unanswered past
the timeout is a lost node (the frozen-node case on a real Valkey is in
tests/platform/test_store_failures.py)."""

from __future__ import annotations

import pytest

from services.common.pubsub_pulse import PING, Pulse, PulseLost


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class PubSub:
    def __init__(self) -> None:
        self.pings: list[str] = []

    async def ping(self, message: str) -> None:
        self.pings.append(message)


async def test_a_busy_subscription_never_pings() -> None:
    clock, pubsub = Clock(), PubSub()
    pulse = Pulse(every_s=1.0, timeout_s=2.0, now=clock)
    for _ in range(10):
        clock.t += 0.5
        pulse.heard()  # a message every half second
        await pulse.beat(pubsub)
    assert pubsub.pings == []


async def test_a_quiet_one_pings_once_and_the_pong_clears_it() -> None:
    clock, pubsub = Clock(), PubSub()
    pulse = Pulse(every_s=1.0, timeout_s=2.0, now=clock)
    clock.t += 1.0
    await pulse.beat(pubsub)
    clock.t += 1.5
    await pulse.beat(pubsub)  # still waiting for the answer: no second ping
    assert pubsub.pings == [PING]
    pulse.heard()  # the pong
    clock.t += 1.0
    await pulse.beat(pubsub)
    assert pubsub.pings == [PING, PING]


async def test_an_unanswered_ping_past_the_timeout_is_a_lost_node() -> None:
    clock, pubsub = Clock(), PubSub()
    pulse = Pulse(every_s=1.0, timeout_s=2.0, now=clock)
    clock.t += 1.0
    await pulse.beat(pubsub)
    clock.t += 2.0
    await pulse.beat(pubsub)  # exactly the timeout: not yet
    clock.t += 0.01
    with pytest.raises(PulseLost):
        await pulse.beat(pubsub)
