"""The ledger audit (`check_invariants`, the wallet's `invariant_ok` gauge) on SQLite and
PostgreSQL: each way books can break is reported, by name, and nothing else is. Each test breaks
the books behind the ledger's back with raw SQL, checks the report, and mends them again (the
conftest checks the books after every test)."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import delete, insert, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from services.contracts import money_keys
from services.wallet.ledger import EXTERNAL, Ledger, check_invariants, player_account
from services.wallet.schema import accounts, operations
from tests.wallet.conftest import fund

pytestmark = pytest.mark.integration
RAISE = money_keys.raise_hold("m", 1, 2)


async def _books(ledger: Ledger) -> None:
    """Two funded players, a match's pot and a double's raise held: every kind of account."""
    await fund(ledger, alice=1000, bob=1000)
    await ledger.escrow("e", "m", ["alice", "bob"], 200)
    await ledger.hold_raise(RAISE, "m", 2)


async def _shift(engine: AsyncEngine, moves: dict[str, int]) -> None:
    async with engine.begin() as conn:
        for account, delta in moves.items():
            await conn.execute(
                update(accounts)
                .where(accounts.c.id == account)
                .values(balance=accounts.c.balance + delta)
            )


async def _broken_then_mended(engine: AsyncEngine, moves: dict[str, int]) -> list[str]:
    await _shift(engine, moves)
    found = await check_invariants(engine)
    await _shift(engine, {account: -delta for account, delta in moves.items()})
    return found


async def test_balanced_books_report_nothing(ledger: Ledger, engine: AsyncEngine) -> None:
    await _books(ledger)
    assert await check_invariants(engine) == []


async def test_diamonds_created_from_nothing(ledger: Ledger, engine: AsyncEngine) -> None:
    await _books(ledger)
    found = await _broken_then_mended(engine, {player_account("alice"): 5})
    assert found == ["accounts hold 2005 but 2000 was deposited"]


async def test_an_account_cannot_even_be_forced_below_zero(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """The schema's check refuses it outright (the audit's "below zero" is defence in depth)."""
    await _books(ledger)
    alice, bob = player_account("alice"), player_account("bob")
    with pytest.raises(IntegrityError):
        await _shift(engine, {bob: 700, alice: -700})
    assert (await ledger.balance("alice"), await ledger.balance("bob")) == (600, 600)
    assert await check_invariants(engine) == []


async def test_a_pot_that_does_not_hold_the_stakes(ledger: Ledger, engine: AsyncEngine) -> None:
    await _books(ledger)
    found = await _broken_then_mended(engine, {"escrow:m": -1, player_account("bob"): 1})
    assert found == ["escrow m (open) holds 399, expected 400"]


async def test_a_closed_pot_that_still_holds_diamonds(ledger: Ledger, engine: AsyncEngine) -> None:
    await _books(ledger)
    await ledger.settle(money_keys.settle("m"), "m", "alice", cube=1)
    found = await _broken_then_mended(engine, {"escrow:m": 3, player_account("bob"): -3})
    assert found == ["escrow m (settled) holds 3, expected 0"]


async def test_a_hold_account_apart_from_its_holds(ledger: Ledger, engine: AsyncEngine) -> None:
    await _books(ledger)
    found = await _broken_then_mended(engine, {"hold:m": 2, player_account("alice"): -2})
    assert found == ["hold:m holds 402, its open holds 400"]


async def test_external_balance_apart_from_deposits(ledger: Ledger, engine: AsyncEngine) -> None:
    await _books(ledger)
    found = await _broken_then_mended(engine, {EXTERNAL: -5, player_account("alice"): 5})
    assert found == ["external balance -2005 disagrees with deposits 2000"]


async def test_a_match_closed_twice(ledger: Ledger, engine: AsyncEngine) -> None:
    await _books(ledger)
    await ledger.refund(money_keys.refund("m"), "m")
    row = {
        "idem_key": "forged-second-close", "kind": "settle", "request_hash": "x",
        "response": "{}", "match_id": "m", "created_ms": int(time.time() * 1000),
    }  # fmt: skip
    async with engine.begin() as conn:
        await conn.execute(insert(operations).values(**row))
    found = await check_invariants(engine)
    async with engine.begin() as conn:
        await conn.execute(delete(operations).where(operations.c.idem_key == row["idem_key"]))
    assert found == ["match m closed 2 times"]
