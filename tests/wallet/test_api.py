"""The wallet over gRPC: operator-only deposits, typed error details, replays, metrics; and the
migrations produce exactly the schema the code declares."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from bg.common.v1 import errors_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import error_from
from services.common.host import ServiceHost
from services.common.migrate import version_table
from services.wallet.api import purchase_signature
from services.wallet.app import MIGRATIONS, build_app
from services.wallet.schema import metadata
from tests.helpers import error_of, scrape_metrics

pytestmark = pytest.mark.integration
TOKEN = [("x-operator-token", "s3cret-op")]
STORE = "store-secret-0123456789-0123456789"
WalletUnderTest = tuple["wallet_pb2_grpc.WalletServiceAsyncStub", ServiceHost]


@contextlib.asynccontextmanager
async def _wallet(
    tmp_path: Path, kafka_bootstrap: str, grant: int = 0
) -> AsyncIterator[tuple[wallet_pb2_grpc.WalletServiceAsyncStub, ServiceHost]]:
    app = build_app(
        {
            "BG_GRPC_PORT": "0",
            "BG_METRICS_PORT": "0",
            "BG_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/w.db",
            "BG_KAFKA_BOOTSTRAP": kafka_bootstrap,
            "BG_WALLET_OPERATOR_TOKEN": "s3cret-op",
            "BG_WALLET_CONSUME": "false",
            "BG_STARTER_GRANT": str(grant),
            "BG_STORE_SECRET": STORE,
        }
    )
    host = ServiceHost(app)
    await host.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel:
        yield wallet_pb2_grpc.WalletServiceStub(channel), host
    await host.stop()


@pytest.fixture
async def wallet(
    tmp_path: Path, kafka_bootstrap: str
) -> AsyncIterator[tuple[wallet_pb2_grpc.WalletServiceAsyncStub, ServiceHost]]:
    async with _wallet(tmp_path, kafka_bootstrap) as found:
        yield found


async def test_the_starter_grant_is_credited_once_per_player(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    ask = wallet_pb2.GrantStarterRequest(player_id="pnew")
    balance = wallet_pb2.GetBalanceRequest(player_id="pnew")
    async with _wallet(tmp_path, kafka_bootstrap, grant=0) as (stub, _):
        assert (await stub.GrantStarter(ask)).amount == 0  # grants off: nothing
        assert (await stub.GetBalance(balance)).balance == 0
    async with _wallet(tmp_path, kafka_bootstrap, grant=500) as (stub, _):
        assert (await stub.GrantStarter(ask)).amount == 500
        assert (await stub.GrantStarter(ask)).amount == 500  # asked again: the same grant
        assert (await stub.GetBalance(balance)).balance == 500
    async with _wallet(tmp_path, kafka_bootstrap, grant=700) as (stub, _):
        assert (await stub.GrantStarter(ask)).amount == 0  # granted before, at another amount
        assert (await stub.GetBalance(balance)).balance == 500


async def test_deposits_need_the_operator_token(wallet: WalletUnderTest) -> None:
    stub, _ = wallet
    request = wallet_pb2.DepositRequest(idempotency_key="d1", player_id="alice", amount=500)
    for metadata_ in (None, [("x-operator-token", "guess")]):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Deposit(request, metadata=metadata_)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        detail = error_from(err.value)
        assert detail is not None and detail.code == "OPERATOR_ONLY"
    assert (await stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id="alice"))).balance == 0
    ok = await stub.Deposit(request, metadata=TOKEN)
    assert ok.kind == "deposit" and not ok.replayed
    again = await stub.Deposit(request, metadata=TOKEN)
    assert again.replayed and again.operation_id == ok.operation_id
    assert (await stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id="alice"))).balance == 500


async def test_errors_are_typed_and_change_nothing(wallet: WalletUnderTest) -> None:
    stub, host = wallet
    await stub.Deposit(
        wallet_pb2.DepositRequest(idempotency_key="a", player_id="alice", amount=1000),
        metadata=TOKEN,
    )
    await stub.Deposit(
        wallet_pb2.DepositRequest(idempotency_key="b", player_id="bob", amount=40), metadata=TOKEN
    )
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Escrow(
            wallet_pb2.EscrowRequest(
                idempotency_key="e", match_id="m", player_ids=["alice", "bob"], stake=100
            )
        )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    detail = error_from(err.value)
    assert (
        detail is not None
        and detail.code == "INSUFFICIENT_FUNDS"
        and detail.metadata["players"] == "bob"
    )
    # As any gRPC client reads it: google.rpc.Status with an ErrorInfo, over the wire.
    trailers: Any = err.value.trailing_metadata() or ()
    (raw,) = [v for k, v in trailers if k == "grpc-status-details-bin"]
    status = status_pb2.Status.FromString(raw)
    info = error_details_pb2.ErrorInfo()
    assert status.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert status.details[0].Unpack(info) and info.reason == "INSUFFICIENT_FUNDS"
    assert info.domain == "bgcluster" and info.metadata["players"] == "bob"
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await stub.HoldSpend(
            wallet_pb2.SpendRequest(
                idempotency_key="s", player_id="alice", amount=-3, reason="boost", match_id="m"
            )
        )
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_of(bad.value).field == "amount"
    assert (await stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id="alice"))).balance == 1000
    history = await stub.GetHistory(wallet_pb2.GetHistoryRequest(player_id="alice"))
    assert [(h.kind, h.amount) for h in history.entries] == [("deposit", 1000)]
    body = await scrape_metrics(host.metrics_port)
    assert 'bg_wallet_operations_total{kind="escrow",outcome="insufficient_funds"} 1.0' in body
    assert 'bg_wallet_operations_total{kind="deposit",outcome="ok"} 2.0' in body
    assert "bg_wallet_outbox_backlog" in body


async def test_full_match_through_the_api(wallet: WalletUnderTest) -> None:
    stub, _ = wallet
    for p in ("alice", "bob"):
        await stub.Deposit(
            wallet_pb2.DepositRequest(idempotency_key=p, player_id=p, amount=2000), metadata=TOKEN
        )
    await stub.Escrow(
        wallet_pb2.EscrowRequest(
            idempotency_key="e", match_id="m", player_ids=["alice", "bob"], stake=500
        )
    )
    await stub.HoldRaise(wallet_pb2.HoldRaiseRequest(idempotency_key="r", match_id="m", cube=2))
    raised = await stub.Capture(wallet_pb2.HoldRequest(idempotency_key="rc", hold_key="r"))
    assert raised.kind == "capture"
    await stub.HoldSpend(
        wallet_pb2.SpendRequest(
            idempotency_key="b", player_id="bob", amount=10, reason="boost", match_id="m"
        )
    )
    await stub.Capture(wallet_pb2.HoldRequest(idempotency_key="bc", hold_key="b"))
    settled = await stub.Settle(
        wallet_pb2.SettleRequest(idempotency_key="s", match_id="m", winner_id="alice", cube=2)
    )
    assert (settled.payout, settled.fees, settled.net_gain) == (1840, 160, 840)
    changes = {c.account: (c.delta, c.balance) for c in settled.changes}
    assert changes["player:alice"] == (1840, 2840) and changes["house"] == (160, 170)


async def test_a_tournaments_pool_through_the_api(wallet: WalletUnderTest) -> None:
    """Issue 29: buy-ins held, the pool started, the prizes paid (a map over the wire), a late
    hold refused as FAILED_PRECONDITION POOL_CLOSED, a short payout INVALID_ARGUMENT."""
    stub, _ = wallet
    for p in ("alice", "bob"):
        await stub.Deposit(
            wallet_pb2.DepositRequest(idempotency_key=p, player_id=p, amount=1000), metadata=TOKEN
        )
        await stub.HoldBuyIn(
            wallet_pb2.BuyInRequest(
                idempotency_key=f"buyin:u1:{p}:0", tournament_id="u1", player_id=p, amount=500
            )
        )
    started = await stub.StartPool(
        wallet_pb2.StartPoolRequest(
            idempotency_key="start:u1", tournament_id="u1", player_ids=["alice", "bob"]
        )
    )
    assert (started.kind, started.payout, started.fees, started.stake) == (
        "start_pool", 920, 80, 500,
    )  # fmt: skip
    listing = wallet_pb2.ListOpenPoolsRequest()
    with pytest.raises(grpc.aio.AioRpcError) as player:  # operators only
        await stub.ListOpenPools(listing)
    assert error_of(player.value).code == "OPERATOR_ONLY"
    running = (await stub.ListOpenPools(listing, metadata=TOKEN)).pools
    assert [(p.tournament_id, p.status, p.entrants, p.diamonds) for p in running] == [
        ("u1", "running", 2, 1000)
    ]
    with pytest.raises(grpc.aio.AioRpcError) as late:
        await stub.HoldBuyIn(
            wallet_pb2.BuyInRequest(
                idempotency_key="buyin:u1:carol:0", tournament_id="u1", player_id="alice",
                amount=500,
            )
        )  # fmt: skip
    assert late.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_of(late.value).code == "POOL_CLOSED"
    with pytest.raises(grpc.aio.AioRpcError) as short:
        await stub.PayPrizes(
            wallet_pb2.PayPrizesRequest(idempotency_key="x", tournament_id="u1", prizes={"bob": 9})
        )
    assert short.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_of(short.value).code == "PRIZES_MISMATCH"
    paid = await stub.PayPrizes(
        wallet_pb2.PayPrizesRequest(
            idempotency_key="prizes:u1", tournament_id="u1", prizes={"bob": 920}
        )
    )
    changes = {c.account: (c.delta, c.balance) for c in paid.changes}
    assert changes["player:bob"] == (920, 1420) and changes["pool:u1"] == (-1000, 0)
    assert (await stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id="alice"))).balance == 500
    assert not (await stub.ListOpenPools(listing, metadata=TOKEN)).pools  # paid: settled
    history = await stub.GetHistory(wallet_pb2.GetHistoryRequest(player_id="bob"))
    assert [(h.kind, h.amount, h.counterparty) for h in history.entries] == [
        ("pay_prizes", 920, "pool:u1"), ("hold_buyin", -500, "hold:u1"),
        ("deposit", 1000, "external"),
    ]  # fmt: skip


async def test_migrations_match_the_declared_schema(engine: AsyncEngine) -> None:
    def diff(sync_conn: Connection) -> Any:
        # The service's own version table is Alembic's, not a difference (migrate.py).
        opts = {"version_table": version_table(MIGRATIONS)}
        return compare_metadata(MigrationContext.configure(sync_conn, opts=opts), metadata)

    async with engine.connect() as conn:
        assert await conn.run_sync(diff) == []


async def test_a_signed_purchase_credits_once_and_a_forged_or_stale_one_nothing(
    wallet: WalletUnderTest,
) -> None:
    stub, _ = wallet
    now = int(time.time() * 1000)

    def purchase(amount: int = 500, issued_ms: int = now, secret: str = STORE) -> Any:
        return wallet_pb2.PurchaseRequest(
            purchase_id="order-1", player_id="pbuyer", amount=amount, issued_ms=issued_ms,
            signature=purchase_signature(secret, "order-1", "pbuyer", amount, issued_ms),
        )  # fmt: skip

    balance = wallet_pb2.GetBalanceRequest(player_id="pbuyer")
    forged = purchase()
    forged.amount = 5000  # the signature was for 500
    for bad, code in (
        (forged, "BAD_SIGNATURE"),
        (purchase(secret="not-the-store-secret-0123456789"), "BAD_SIGNATURE"),
        (purchase(issued_ms=now - 3_600_000), "STALE_REQUEST"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.CreditPurchase(bad)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert (error_from(err.value) or errors_pb2.Error()).code == code
    assert (await stub.GetBalance(balance)).balance == 0  # nothing credited
    first = await stub.CreditPurchase(purchase())
    replay = await stub.CreditPurchase(purchase())  # the store retries its webhook
    assert not first.replayed and replay.replayed and replay.operation_id == first.operation_id
    assert (await stub.GetBalance(balance)).balance == 500
