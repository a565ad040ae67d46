"""What a table needs from the wallet, as a port; the gRPC adapter talks to the wallet service."""

from __future__ import annotations

from typing import Protocol

import grpc

from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import ServiceError, remote_call


class WalletPort(Protocol):
    async def balance(self, player_id: str) -> int: ...
    async def spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> None: ...
    async def raise_escrow(self, key: str, match_id: str) -> None: ...


class GrpcWallet:
    def __init__(self, channel: grpc.aio.Channel, timeout_s: float = 5.0) -> None:
        self.stub = wallet_pb2_grpc.WalletServiceStub(channel)
        self.timeout_s = timeout_s

    async def balance(self, player_id: str) -> int:
        reply = await self.stub.GetBalance(
            wallet_pb2.GetBalanceRequest(player_id=player_id), timeout=self.timeout_s
        )
        return int(reply.balance)

    async def spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> None:
        request = wallet_pb2.SpendRequest(
            idempotency_key=key,
            player_id=player_id,
            amount=amount,
            reason=reason,
            match_id=match_id,
        )
        await self._call(self.stub.Spend(request, timeout=self.timeout_s))

    async def raise_escrow(self, key: str, match_id: str) -> None:
        request = wallet_pb2.RaiseEscrowRequest(idempotency_key=key, match_id=match_id)
        await self._call(self.stub.RaiseEscrow(request, timeout=self.timeout_s))

    async def _call(self, call: object) -> None:
        await remote_call(call)


class NoWallet:
    """For tables without money (scored, casual) and for tests: every call is refused loudly."""

    async def balance(self, player_id: str) -> int:
        raise ServiceError("NO_WALLET", "this table has no wallet")

    async def spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> None:
        raise ServiceError("NO_WALLET", "this table has no wallet")

    async def raise_escrow(self, key: str, match_id: str) -> None:
        raise ServiceError("NO_WALLET", "this table has no wallet")
