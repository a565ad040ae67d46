"""The wallet's ports: match outcomes from the table service (the reconciler's,
services/wallet/adapters/grpc_outcomes.py) and the Kafka producer the outbox relay publishes on."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from bg.table.v1 import table_pb2


class OutcomePort(Protocol):
    async def outcome(self, table_id: str, match_id: str) -> table_pb2.MatchOutcome: ...


class Publisher(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def send(self, topic: str, value: bytes, key: bytes) -> Awaitable[Any]: ...
