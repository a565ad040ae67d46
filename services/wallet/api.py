"""The gRPC servicer of bg.wallet.v1.WalletService: proto <-> ledger, typed errors -> status."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable
from typing import Any

import grpc

from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.clock import now_ms
from services.common.errors import PermissionDenied, ServiceError, grpc_errors
from services.wallet.ledger import Ledger, Outcome
from services.wallet.metrics import WalletMetrics
from services.wallet.pools import Pools

Context = grpc.aio.ServicerContext[Any, Any]


def _response(outcome: Outcome) -> wallet_pb2.OperationResponse:
    return wallet_pb2.OperationResponse(
        operation_id=outcome.operation_id,
        kind=outcome.kind,
        changes=[
            wallet_pb2.BalanceChange(account=acct, delta=delta, balance=balance)
            for acct, (delta, balance) in sorted(outcome.changes.items())
        ],
        payout=outcome.payout,
        fees=outcome.fees,
        net_gain=outcome.net_gain,
        stake=outcome.stake,
        replayed=outcome.replayed,
    )


PURCHASE_WINDOW_MS = 10 * 60 * 1000  # a signed purchase older (or newer) than this is refused


def purchase_signature(
    secret: str, purchase_id: str, player_id: str, amount: int, issued_ms: int
) -> str:
    """What the store signs: hex HMAC-SHA256 of "<purchase_id>|<player_id>|<amount>|<issued_ms>"."""
    message = f"{purchase_id}|{player_id}|{amount}|{issued_ms}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


class WalletServicer(wallet_pb2_grpc.WalletServiceServicer):
    def __init__(
        self,
        ledger: Ledger,
        metrics: WalletMetrics,
        operator_token: str,
        starter_grant: int = 0,
        store_secret: str = "",
    ) -> None:
        self.ledger = ledger
        self.pools = Pools(ledger)
        self.metrics = metrics
        self.operator_token = operator_token
        self.starter_grant = starter_grant
        self.store_secret = store_secret

    async def _op(self, kind: str, call: Awaitable[Outcome]) -> wallet_pb2.OperationResponse:
        try:
            outcome = await call
        except ServiceError as err:
            self.metrics.operations.labels(kind, err.code.lower()).inc()
            raise
        self.metrics.operations.labels(kind, "replayed" if outcome.replayed else "ok").inc()
        return _response(outcome)

    @grpc_errors
    async def GetBalance(
        self, request: wallet_pb2.GetBalanceRequest, context: Context
    ) -> wallet_pb2.GetBalanceResponse:
        balance = await self.ledger.balance(request.player_id)
        return wallet_pb2.GetBalanceResponse(player_id=request.player_id, balance=balance)

    @grpc_errors
    async def GetHistory(
        self, request: wallet_pb2.GetHistoryRequest, context: Context
    ) -> wallet_pb2.GetHistoryResponse:
        rows = await self.ledger.history(request.player_id, request.limit, request.before_id)
        return wallet_pb2.GetHistoryResponse(
            entries=[wallet_pb2.HistoryEntry(**row) for row in rows]
        )

    def _operator_only(self, context: Context, kind: str) -> None:
        token = dict(context.invocation_metadata() or ()).get("x-operator-token", "")
        if not self.operator_token or not hmac.compare_digest(str(token), self.operator_token):
            self.metrics.operations.labels(kind, "permission_denied").inc()
            raise PermissionDenied("OPERATOR_ONLY", f"{kind} needs a valid operator token")

    @grpc_errors
    async def Adjust(
        self, request: wallet_pb2.AdjustRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        self._operator_only(context, "adjust")
        call = self.ledger.adjust(
            request.idempotency_key,
            request.player_id,
            request.amount,
            request.operator,
            request.reason,
        )
        return await self._op("adjust", call)

    @grpc_errors
    async def ListOpenEscrows(
        self, request: wallet_pb2.ListOpenEscrowsRequest, context: Context
    ) -> wallet_pb2.ListOpenEscrowsResponse:
        self._operator_only(context, "list_open_escrows")
        rows = await self.ledger.open_escrows(request.older_than_s * 1000, request.limit)
        return wallet_pb2.ListOpenEscrowsResponse(
            escrows=[
                wallet_pb2.OpenEscrow(
                    match_id=r.match_id,
                    player_ids=[r.player_a, r.player_b],
                    stakes=[r.stake_a, r.stake_b],
                    created_ms=r.created_ms,
                )
                for r in rows
            ]
        )

    @grpc_errors
    async def ListOpenPools(
        self, request: wallet_pb2.ListOpenPoolsRequest, context: Context
    ) -> wallet_pb2.ListOpenPoolsResponse:
        self._operator_only(context, "list_open_pools")
        rows = await self.pools.open_pools(request.older_than_s * 1000, request.limit)
        return wallet_pb2.ListOpenPoolsResponse(
            pools=[
                wallet_pb2.OpenPool(
                    tournament_id=r.tournament_id,
                    buy_in=r.buy_in,
                    status=r.status,
                    entrants=r.entrants,
                    diamonds=r.diamonds,
                    created_ms=r.created_ms,
                )
                for r in rows
            ]
        )

    @grpc_errors
    async def Deposit(
        self, request: wallet_pb2.DepositRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        self._operator_only(context, "deposit")
        call = self.ledger.deposit(
            request.idempotency_key, request.player_id, request.amount, request.reason
        )
        return await self._op("deposit", call)

    @grpc_errors
    async def GrantStarter(
        self, request: wallet_pb2.GrantStarterRequest, context: Context
    ) -> wallet_pb2.GrantStarterResponse:
        if self.starter_grant <= 0:
            return wallet_pb2.GrantStarterResponse(amount=0)
        call = self.ledger.deposit(
            f"starter:{request.player_id}", request.player_id, self.starter_grant, "starter grant"
        )
        try:
            await self._op("deposit", call)
        except ServiceError as err:
            if err.code != "IDEMPOTENCY_CONFLICT":
                raise
            return wallet_pb2.GrantStarterResponse(amount=0)  # granted before, another amount
        return wallet_pb2.GrantStarterResponse(amount=self.starter_grant)

    @grpc_errors
    async def CreditPurchase(
        self, request: wallet_pb2.PurchaseRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        if not self.store_secret:
            raise PermissionDenied("PURCHASES_DISABLED", "this wallet takes no purchases")
        signed = purchase_signature(
            self.store_secret,
            request.purchase_id,
            request.player_id,
            request.amount,
            request.issued_ms,
        )
        if not hmac.compare_digest(signed, request.signature):
            self.metrics.operations.labels("purchase", "bad_signature").inc()
            raise PermissionDenied("BAD_SIGNATURE", "the purchase is not signed by the store")
        if abs(now_ms() - request.issued_ms) > PURCHASE_WINDOW_MS:
            raise PermissionDenied("STALE_REQUEST", "the purchase was signed too long ago")
        call = self.ledger.deposit(
            f"purchase:{request.purchase_id}", request.player_id, request.amount, "purchase"
        )
        return await self._op("deposit", call)

    @grpc_errors
    async def CloseAccount(
        self, request: wallet_pb2.CloseAccountRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.ledger.close_account(request.idempotency_key, request.player_id)
        return await self._op("close", call)

    @grpc_errors
    async def Escrow(
        self, request: wallet_pb2.EscrowRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.ledger.escrow(
            request.idempotency_key, request.match_id, list(request.player_ids), request.stake
        )
        return await self._op("escrow", call)

    @grpc_errors
    async def Settle(
        self, request: wallet_pb2.SettleRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.ledger.settle(
            request.idempotency_key,
            request.match_id,
            request.winner_id,
            request.cube or 1,
            list(request.applied_boosts),
        )
        return await self._op("settle", call)

    @grpc_errors
    async def Refund(
        self, request: wallet_pb2.RefundRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.ledger.refund(
            request.idempotency_key, request.match_id, list(request.applied_boosts)
        )
        return await self._op("refund", call)

    @grpc_errors
    async def HoldRaise(
        self, request: wallet_pb2.HoldRaiseRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.ledger.hold_raise(request.idempotency_key, request.match_id, request.cube)
        return await self._op("hold_raise", call)

    @grpc_errors
    async def HoldSpend(
        self, request: wallet_pb2.SpendRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.ledger.hold_spend(
            request.idempotency_key,
            request.player_id,
            request.amount,
            request.reason,
            request.match_id,
        )
        return await self._op("hold_spend", call)

    @grpc_errors
    async def Capture(
        self, request: wallet_pb2.HoldRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.ledger.capture(request.idempotency_key, request.hold_key)
        return await self._op("capture", call)

    @grpc_errors
    async def Release(
        self, request: wallet_pb2.HoldRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.ledger.release(request.idempotency_key, request.hold_key)
        return await self._op("release", call)

    @grpc_errors
    async def HoldBuyIn(
        self, request: wallet_pb2.BuyInRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.pools.hold_buyin(
            request.idempotency_key, request.tournament_id, request.player_id, request.amount
        )
        return await self._op("hold_buyin", call)

    @grpc_errors
    async def StartPool(
        self, request: wallet_pb2.StartPoolRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.pools.start(
            request.idempotency_key, request.tournament_id, list(request.player_ids)
        )
        return await self._op("start_pool", call)

    @grpc_errors
    async def PayPrizes(
        self, request: wallet_pb2.PayPrizesRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.pools.pay(request.idempotency_key, request.tournament_id, dict(request.prizes))
        return await self._op("pay_prizes", call)

    @grpc_errors
    async def RefundPool(
        self, request: wallet_pb2.RefundPoolRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        call = self.pools.refund(request.idempotency_key, request.tournament_id)
        return await self._op("refund_pool", call)
