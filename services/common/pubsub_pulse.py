"""A pub/sub connection's pulse: a quiet subscription pings its node and expects the pong.

A Valkey node that is frozen or cut off keeps its TCP sockets open, so a subscriber on it reads
nothing, without an error, for ever: the updates of every table it follows stop although their
commits go on (its replica took over, or another node serves the publishers). redis-py's own
health check pings but never asks for the answer. So a listener calls `beat` after each read:
when nothing came for `every_s` it pings, and when nothing (the pong included) came for
`timeout_s` after that, `beat` raises `PulseLost` and the listener resubscribes, after the
cluster's slots were read again, and fills what it missed from the tables' streams.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

PING = "bg-pulse"


class PulseLost(ConnectionError):
    """The subscription's node did not answer a ping in time."""


class Pulse:
    def __init__(
        self,
        every_s: float = 1.0,
        timeout_s: float = 2.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_s = every_s
        self.timeout_s = timeout_s
        self.now = now
        self._heard = now()
        self._pinged: float | None = None

    def heard(self) -> None:
        """Something came from the node (a message, a pong): it is alive."""
        self._heard = self.now()
        self._pinged = None

    async def beat(self, pubsub: Any) -> None:
        """Ping a quiet subscription; raise PulseLost when the last ping went unanswered."""
        now = self.now()
        if self._pinged is not None:
            if now - self._pinged > self.timeout_s:
                raise PulseLost(f"no pong in {self.timeout_s} s")
            return
        if now - self._heard >= self.every_s:
            await pubsub.ping(PING)
            self._pinged = now
