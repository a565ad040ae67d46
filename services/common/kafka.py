"""Kafka clients built from settings. Idempotence is a setting: Tansu refuses InitProducerId,
so it is off locally and on in production; consumers deduplicate either way."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

log = logging.getLogger("bg.kafka")


def producer(bootstrap: str, idempotent: bool, client_id: str) -> AIOKafkaProducer:
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        enable_idempotence=idempotent,
        acks="all",
        linger_ms=5,
        request_timeout_ms=10_000,
    )


def consumer(bootstrap: str, group: str, *topics: str, client_id: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )


async def keep_consuming(
    make_consumer: Callable[[], Any],
    run: Callable[[Any], Awaitable[None]],
    stop: asyncio.Event,
    name: str,
) -> None:
    """Run a consumer loop until `stop`; when it fails (broker down, rebalance error), log it and
    start over with a new consumer after 2 s. Offsets are committed after processing, so a
    restart re-delivers at most the last batch (consumers are idempotent)."""
    while not stop.is_set():
        try:
            await run(make_consumer())
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("consumer failed; restarting in 2 s", extra={"consumer": name})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 2.0)
