"""Group commit: calls waiting together share one transaction, and each keeps its own answer.

On SQLite and PostgreSQL; the books are checked after every test (conftest)."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.errors import ServiceError
from services.wallet.ledger import HOUSE, Ledger, fee
from services.wallet.schema import escrows, operations, outbox, transfers
from tests.wallet.conftest import fund

pytestmark = pytest.mark.integration


async def _count(engine: AsyncEngine, table: object) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(table)) or 0)  # type: ignore[arg-type]


async def test_a_refused_call_in_the_middle_of_a_batch_changes_nothing_and_the_rest_stand(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    await fund(ledger, alice=500, bob=500, carol=50, dave=500)
    batches: list[int] = []
    ledger = Ledger(engine, fee_bps=800, on_batch=batches.append)
    before_ops, before_moves = await _count(engine, operations), await _count(engine, transfers)
    results = await asyncio.gather(
        ledger.escrow("e1", "m1", ["alice", "bob"], 100),
        ledger.escrow("e2", "m2", ["carol", "dave"], 100),  # carol has 50
        ledger.hold_spend("s1", "dave", 30, "boost", "m3"),
        return_exceptions=True,
    )
    assert batches == [3]  # one transaction for all three
    first, refused, spent = results
    assert isinstance(refused, ServiceError) and refused.code == "INSUFFICIENT_FUNDS"
    assert not isinstance(first, BaseException) and not isinstance(spent, BaseException)
    assert await ledger.balance("carol") == 50 and await ledger.balance("dave") == 470
    assert await ledger.balance("alice") == 400 and await ledger.balance("bob") == 400
    assert await _count(engine, operations) == before_ops + 2  # the refused one wrote nothing
    assert await _count(engine, transfers) == before_moves + 3
    async with engine.connect() as conn:
        assert await conn.scalar(select(func.count()).where(escrows.c.match_id == "m2")) == 0
    # Each answer is its own: ids, balances after it, its event in the outbox.
    assert first.operation_id != spent.operation_id
    assert spent.changes["player:dave"] == [-30, 470]
    assert await _count(engine, outbox) == await _count(engine, operations)


async def test_one_match_escrowed_settled_and_a_key_repeated_in_one_batch(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """Later calls see what earlier ones in their batch did (the escrow opened, the pot);
    a key repeated while its first call waits is answered once, as a replay."""
    await fund(ledger, alice=1000, bob=1000)
    batches: list[int] = []
    ledger = Ledger(engine, fee_bps=800, on_batch=batches.append)
    escrowed, settled, again = await asyncio.gather(
        ledger.escrow("e", "m", ["alice", "bob"], 200),
        ledger.settle("s", "m", "alice"),
        ledger.escrow("e", "m", ["alice", "bob"], 200),
    )
    assert batches == [2, 1]  # the repeated key waits for the next batch
    assert again.replayed and again.operation_id == escrowed.operation_id
    fees = 2 * fee(200, 800)
    assert settled.payout == 400 - fees
    assert await ledger.balance("alice") == 1000 - 200 + 400 - fees
    async with engine.connect() as conn:
        house = await conn.scalar(
            select(func.sum(transfers.c.amount)).where(transfers.c.credit == HOUSE)
        )
    assert house == fees


async def test_a_closed_escrow_is_a_failed_precondition_not_a_malformed_status(
    ledger: Ledger,
) -> None:
    """ESCROW_CLOSED once carried the escrow's status where the gRPC code belongs."""
    await fund(ledger, alice=500, bob=500)
    await ledger.escrow("e", "m", ["alice", "bob"], 100)
    await ledger.settle("s", "m", "alice")
    with pytest.raises(ServiceError) as err:
        await ledger.refund("r", "m")
    assert err.value.code == "ESCROW_CLOSED"
    assert err.value.status == grpc.StatusCode.FAILED_PRECONDITION
    assert err.value.metadata == {"escrow_status": "settled"}


async def test_a_caller_that_goes_away_does_not_stop_its_operation(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    await fund(ledger, alice=500)
    call = asyncio.ensure_future(ledger.hold_spend("s", "alice", 40, "boost", "m"))
    await asyncio.sleep(0)  # queued
    call.cancel()
    for _ in range(200):
        if await ledger.balance("alice") == 460:
            break
        await asyncio.sleep(0.01)
    assert await ledger.balance("alice") == 460
    replay = await ledger.hold_spend("s", "alice", 40, "boost", "m")
    assert replay.replayed and await ledger.balance("alice") == 460
