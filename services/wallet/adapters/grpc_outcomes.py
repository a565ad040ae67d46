"""The reconciler's outcome port (services/wallet/ports.py) on the table service's gRPC API."""

from __future__ import annotations

import grpc

from bg.table.v1 import table_pb2, table_pb2_grpc
from services.common.errors import remote_call


class GrpcOutcomes:
    """Asks the table service (any replica, over one balanced channel)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = table_pb2_grpc.TableServiceStub(channel)

    async def outcome(self, table_id: str, match_id: str) -> table_pb2.MatchOutcome:
        request = table_pb2.GetMatchOutcomeRequest(table_id=table_id, match_id=match_id)
        reply: table_pb2.MatchOutcome = await remote_call(
            self.stub.GetMatchOutcome(request, timeout=5)
        )
        return reply
