"""The gateway's BalancesPort on the wallet (bg.wallet.v1)."""

from __future__ import annotations

from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import remote_call

TIMEOUT_S = 10.0


class GrpcBalances:
    def __init__(self, stub: wallet_pb2_grpc.WalletServiceAsyncStub) -> None:
        self.stub = stub

    async def balance(self, player_id: str) -> int:
        asked = wallet_pb2.GetBalanceRequest(player_id=player_id)
        return int((await remote_call(self.stub.GetBalance(asked, timeout=TIMEOUT_S))).balance)
