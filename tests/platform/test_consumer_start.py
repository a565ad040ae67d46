"""Issue 44, item 2: a broker that cannot be reached is not an ERROR line. A consumer that
failed to start used to be left for the collector, and aiokafka then logged "Unclosed
AIOKafkaConsumer" at ERROR (seen in the soak's table replica after the broker restarted)."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket

import pytest
from aiokafka.errors import KafkaConnectionError

from services.common import embedded_generations

pytestmark = pytest.mark.unit


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once it is closed


async def test_a_consumer_that_cannot_start_is_stopped(caplog: pytest.LogCaptureFixture) -> None:
    gc.collect()  # other tests' garbage is reported before, not during, this one
    caplog.set_level(logging.ERROR, logger="asyncio")
    with pytest.raises(KafkaConnectionError):
        await embedded_generations._started(f"127.0.0.1:{_closed_port()}", enable_auto_commit=False)
    gc.collect()
    await asyncio.sleep(0)  # the loop's exception handler logs what the collector reports
    assert not [r for r in caplog.records if "Unclosed AIOKafkaConsumer" in r.getMessage()]
