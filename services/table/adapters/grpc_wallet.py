"""The table's wallet port (services/table/ports.py) on the wallet service's gRPC API."""

from __future__ import annotations

import grpc

from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import remote_call
from services.contracts import money_keys


class GrpcWallet:
    def __init__(self, channel: grpc.aio.Channel, timeout_s: float = 5.0) -> None:
        self.stub = wallet_pb2_grpc.WalletServiceStub(channel)
        self.timeout_s = timeout_s

    async def hold_raise(self, key: str, match_id: str, cube: int) -> None:
        request = wallet_pb2.HoldRaiseRequest(idempotency_key=key, match_id=match_id, cube=cube)
        await remote_call(self.stub.HoldRaise(request, timeout=self.timeout_s))

    async def hold_spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> None:
        request = wallet_pb2.SpendRequest(
            idempotency_key=key,
            player_id=player_id,
            amount=amount,
            reason=reason,
            match_id=match_id,
        )
        await remote_call(self.stub.HoldSpend(request, timeout=self.timeout_s))

    async def capture(self, hold_key: str) -> None:
        request = wallet_pb2.HoldRequest(
            idempotency_key=money_keys.capture(hold_key), hold_key=hold_key
        )
        await remote_call(self.stub.Capture(request, timeout=self.timeout_s))
