"""Kafka clients built from settings. Idempotence is a setting: Tansu refuses InitProducerId,
so it is off locally and on in production; consumers deduplicate either way."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


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
