"""The wallet's ports: match outcomes from the table service (the reconciler's,
services/wallet/adapters/grpc_outcomes.py). The outbox relay publishes on the platform's event
log port (services/common/log_port.py)."""

from __future__ import annotations

from typing import Protocol

from bg.table.v1 import table_pb2


class OutcomePort(Protocol):
    async def outcome(self, table_id: str, match_id: str) -> table_pb2.MatchOutcome: ...
