"""gRPC adapters of matchmaking's ports (services/matchmaking/ports.py): wallet and tables."""

from __future__ import annotations

import grpc

from bg.table.v1 import table_pb2, table_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import remote_call

call = remote_call  # the lobby's calls to the wallet and tables


class GrpcWallet:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = wallet_pb2_grpc.WalletServiceStub(channel)

    async def escrow(self, key: str, match_id: str, players: list[str], stake: int) -> None:
        request = wallet_pb2.EscrowRequest(
            idempotency_key=key, match_id=match_id, player_ids=players, stake=stake
        )
        await call(self.stub.Escrow(request, timeout=5))

    async def refund(self, key: str, match_id: str) -> None:
        request = wallet_pb2.RefundRequest(idempotency_key=key, match_id=match_id)
        await call(self.stub.Refund(request, timeout=5))

    async def balance(self, player_id: str) -> int:
        reply = await call(
            self.stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player_id), timeout=5)
        )
        return int(reply.balance)


class GrpcPool:
    """The wallet's prize pool calls (services/matchmaking/ports.py PoolPort)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = wallet_pb2_grpc.WalletServiceStub(channel)

    async def hold_buyin(self, key: str, tournament_id: str, player_id: str, amount: int) -> None:
        request = wallet_pb2.BuyInRequest(
            idempotency_key=key, tournament_id=tournament_id, player_id=player_id, amount=amount
        )
        await call(self.stub.HoldBuyIn(request, timeout=5))

    async def release(self, key: str, hold_key: str) -> None:
        await call(
            self.stub.Release(
                wallet_pb2.HoldRequest(idempotency_key=key, hold_key=hold_key), timeout=5
            )
        )

    async def start_pool(self, key: str, tournament_id: str, players: list[str]) -> tuple[int, int]:
        request = wallet_pb2.StartPoolRequest(
            idempotency_key=key, tournament_id=tournament_id, player_ids=players
        )
        reply = await call(self.stub.StartPool(request, timeout=5))
        return int(reply.payout), int(reply.fees)

    async def pay_prizes(self, key: str, tournament_id: str, prizes: dict[str, int]) -> None:
        request = wallet_pb2.PayPrizesRequest(
            idempotency_key=key, tournament_id=tournament_id, prizes=prizes
        )
        await call(self.stub.PayPrizes(request, timeout=5))

    async def refund_pool(self, key: str, tournament_id: str) -> None:
        request = wallet_pb2.RefundPoolRequest(idempotency_key=key, tournament_id=tournament_id)
        await call(self.stub.RefundPool(request, timeout=5))


class GrpcTables:
    """Any table replica serves any table: one balanced channel to them all (an unreachable one
    hands the call to the next, services/common/balanced.py)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = table_pb2_grpc.TableServiceStub(channel)

    async def create_match(
        self, table_id: str, match_id: str, players: list[str], options: table_pb2.TableOptions
    ) -> str:
        request = table_pb2.CreateMatchRequest(
            table_id=table_id, match_id=match_id, player_ids=players, options=options
        )
        reply = await call(self.stub.CreateMatch(request, timeout=5))
        return str(reply.fingerprint)

    async def leave(self, table_id: str, player_id: str, seat: int) -> None:
        request = table_pb2.SubmitCommandRequest(
            table_id=table_id,
            player_id=player_id,
            seat=seat,
            command=table_pb2.Command(leave=table_pb2.Empty()),
        )
        await call(self.stub.SubmitCommand(request, timeout=5))

    async def rematch_agreed(self, table_id: str, player_id: str) -> bool:
        request = table_pb2.GetViewRequest(table_id=table_id, player_id=player_id)
        reply = await call(self.stub.GetView(request, timeout=5))
        return bool(reply.rematch_agreed)

    async def match_exists(self, table_id: str, match_id: str) -> bool:
        request = table_pb2.GetMatchOutcomeRequest(table_id=table_id, match_id=match_id)
        reply = await call(self.stub.GetMatchOutcome(request, timeout=5))
        return bool(reply.state != table_pb2.MatchOutcome.State.STATE_UNKNOWN)

    async def match_winner(self, table_id: str, match_id: str) -> str | None:
        request = table_pb2.GetMatchOutcomeRequest(table_id=table_id, match_id=match_id)
        reply = await call(self.stub.GetMatchOutcome(request, timeout=5))
        if reply.state == table_pb2.MatchOutcome.State.STATE_ENDED:
            return str(reply.winner_id)
        if reply.state == table_pb2.MatchOutcome.State.STATE_CLOSED:
            return ""
        return None

    async def match_in_play(self, table_id: str, match_id: str) -> bool:
        request = table_pb2.GetMatchOutcomeRequest(table_id=table_id, match_id=match_id)
        reply = await call(self.stub.GetMatchOutcome(request, timeout=5))
        return bool(reply.state == table_pb2.MatchOutcome.State.STATE_PLAYING)
