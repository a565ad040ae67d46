"""The ledger's rules on SQLite and PostgreSQL (I-4, I-10, I-11); bad input changes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.errors import ServiceError
from services.wallet.ledger import CLOSED, HOUSE, InsufficientFunds, Ledger, fee
from services.wallet.schema import accounts, escrows, operations, outbox, transfers
from tests.wallet.conftest import fund

pytestmark = pytest.mark.integration


async def _rows(engine: AsyncEngine) -> tuple[int, ...]:
    async with engine.connect() as conn:
        counts = []
        for table in (accounts, operations, transfers, escrows, outbox):
            counts.append(int(await conn.scalar(select(func.count()).select_from(table)) or 0))
        total = await conn.scalar(select(func.sum(accounts.c.balance)))
    return (*counts, int(total or 0))


async def _house(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(select(accounts.c.balance).where(accounts.c.id == HOUSE)) or 0)


async def test_i11_settle_pays_the_pot_less_8_percent_of_each_side(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """The seed's example: stakes 1,000 each -> pot 2,000, 80 fee each, 1,840 to the winner."""
    await fund(ledger, alice=1500, bob=1000)
    out = await ledger.escrow("e1", "m1", ["alice", "bob"], 1000)
    assert (
        out.stake == 1000
        and await ledger.balance("alice") == 500
        and await ledger.balance("bob") == 0
    )
    settled = await ledger.settle("s1", "m1", "bob")
    assert (settled.payout, settled.fees, settled.net_gain) == (1840, 160, 840)  # I-13: net 840
    assert await ledger.balance("bob") == 1840 and await ledger.balance("alice") == 500
    assert await _house(engine) == 160
    assert fee(1000, 800) == 80


async def test_escrow_is_all_or_nothing_and_says_who_is_short(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    await fund(ledger, alice=1000, bob=50)
    before = await _rows(engine)
    with pytest.raises(InsufficientFunds) as err:
        await ledger.escrow("e", "m", ["alice", "bob"], 100)
    assert err.value.players == ["bob"] and err.value.code == "INSUFFICIENT_FUNDS"
    with pytest.raises(InsufficientFunds) as err2:
        await ledger.escrow("e2", "m", ["carol", "bob"], 100)  # carol has no account at all
    assert err2.value.players == ["carol", "bob"]
    assert await _rows(engine) == before
    assert await ledger.balance("alice") == 1000


async def test_idempotency_replays_and_conflicts(ledger: Ledger, engine: AsyncEngine) -> None:
    first = await ledger.deposit("k", "alice", 500)
    again = await ledger.deposit("k", "alice", 500)
    assert (
        again.replayed
        and again.operation_id == first.operation_id
        and again.changes == first.changes
    )
    assert await ledger.balance("alice") == 500
    with pytest.raises(ServiceError) as err:
        await ledger.deposit("k", "alice", 600)
    assert err.value.code == "IDEMPOTENCY_CONFLICT"
    assert await ledger.balance("alice") == 500


async def test_settle_and_refund_happen_at_most_once_in_total(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    await fund(ledger, alice=500, bob=500)
    await ledger.escrow("e", "m", ["alice", "bob"], 100)
    await ledger.settle("s", "m", "alice")
    for call in (
        ledger.settle("s2", "m", "alice"),
        ledger.refund("r", "m"),
        ledger.settle("s3", "m", "bob"),
    ):
        with pytest.raises(ServiceError) as err:
            await call
        assert err.value.code == "ESCROW_CLOSED"
    assert (await ledger.settle("s", "m", "alice")).replayed  # the original key still answers
    await fund(ledger, carol=500, dave=500)
    await ledger.escrow("e2", "m2", ["carol", "dave"], 100)
    await ledger.refund("r2", "m2")
    with pytest.raises(ServiceError, match="already refunded"):
        await ledger.settle("s4", "m2", "carol")


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda lg: lg.deposit("k1", "alice", 0), "INVALID_AMOUNT"),
        (lambda lg: lg.deposit("k2", "alice", -5), "INVALID_AMOUNT"),
        (lambda lg: lg.deposit("", "alice", 5), "INVALID_IDEMPOTENCY_KEY"),
        (lambda lg: lg.deposit("k3", "bad id", 5), "INVALID_ID"),
        (lambda lg: lg.hold_spend("k4", "alice", 0, "boost", "m"), "INVALID_AMOUNT"),
        (lambda lg: lg.hold_spend("k5", "nobody", 10, "boost", "m"), "UNKNOWN_PLAYER"),
        (lambda lg: lg.hold_spend("k6", "alice", 10_000, "boost", "m"), "INSUFFICIENT_FUNDS"),
        (lambda lg: lg.escrow("k7", "m9", ["alice", "alice"], 100), "INVALID_PLAYERS"),
        (lambda lg: lg.escrow("k8", "m9", ["alice"], 100), "INVALID_PLAYERS"),
        (lambda lg: lg.escrow("k9", "m9", ["alice", "bob"], 0), "INVALID_AMOUNT"),
        (lambda lg: lg.escrow("k10", "m", ["alice", "bob"], 100), "ESCROW_EXISTS"),
        (lambda lg: lg.settle("k11", "nomatch", "alice"), "UNKNOWN_MATCH"),
        (lambda lg: lg.settle("k12", "m", "mallory"), "NOT_SEATED"),
        (lambda lg: lg.refund("k13", "nomatch"), "UNKNOWN_MATCH"),
        (lambda lg: lg.hold_raise("k14", "nomatch", 2), "UNKNOWN_MATCH"),
        (lambda lg: lg.history("alice", limit=500), "INVALID_LIMIT"),
    ],
)
async def test_bad_input_gets_a_typed_error_and_writes_nothing(
    ledger: Ledger, engine: AsyncEngine, call: Callable[[Ledger], Awaitable[object]], code: str
) -> None:
    await fund(ledger, alice=1000, bob=1000)
    await ledger.escrow("e", "m", ["alice", "bob"], 100)
    before = await _rows(engine)
    with pytest.raises(ServiceError) as err:
        await call(ledger)
    assert err.value.code == code
    assert await _rows(engine) == before


async def test_history_lists_signed_movements_newest_first(ledger: Ledger) -> None:
    await fund(ledger, alice=1000, bob=1000)
    await ledger.escrow("e", "m", ["alice", "bob"], 100)
    await ledger.hold_spend("b", "alice", 10, "boost", "m")
    rows = await ledger.history("alice")
    assert [(r["kind"], r["amount"], r["counterparty"]) for r in rows] == [
        ("hold_spend", -10, "hold:m"),
        ("escrow", -100, "escrow:m"),
        ("deposit", 1000, "external"),
    ]
    assert rows[0]["match_id"] == "m"
    older = await ledger.history("alice", limit=1, before_id=rows[0]["id"])
    assert [r["id"] for r in older] == [rows[1]["id"]]


async def test_every_operation_writes_its_event_to_the_outbox(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    from bg.events.v1 import events_pb2

    await fund(ledger, alice=1000, bob=1000)
    await ledger.escrow("e", "m", ["alice", "bob"], 1000)
    await ledger.settle("s", "m", "alice")
    async with engine.connect() as conn:
        rows = (await conn.execute(select(outbox).order_by(outbox.c.id))).all()
    kinds = []
    for row in rows:
        event = events_pb2.WalletEvent()
        event.ParseFromString(row.payload)
        kinds.append(event.kind)
        if event.kind == "settle":
            assert (event.winner_id, event.net_gain, event.fees, row.key) == (
                "alice",
                840,
                160,
                "escrow:m",
            )
            assert dict(event.player_deltas) == {"alice": 1840}
    assert kinds == ["deposit", "deposit", "escrow", "settle"]


async def test_a_closed_account_keeps_the_books_whole_and_waits_for_matches_in_play(
    ledger: Ledger,
) -> None:
    """Account deletion: the balance moves to the closed-accounts account (the fixture checks
    the books after the test); refused while the player has stakes in play; once only."""
    await fund(ledger, ann=1000, bob=1000)
    await ledger.escrow("e1", "m1", ["ann", "bob"], 300)
    with pytest.raises(ServiceError) as in_play:
        await ledger.close_account("close:ann", "ann")
    assert in_play.value.code == "IN_PLAY"
    assert await ledger.balance("ann") == 700  # nothing changed
    await ledger.refund("r1", "m1")
    closed = await ledger.close_account("close:ann", "ann")
    assert closed.changes == {"player:ann": [-1000, 0], CLOSED: [1000, 1000]}
    again = await ledger.close_account("close:ann", "ann")
    assert again.replayed and await ledger.balance("ann") == 0
    empty = await ledger.close_account("close:carol", "carol")  # nothing to move
    assert empty.changes == {}


async def test_an_operators_credit_and_debit_keep_who_and_why_and_never_overdraw(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """Issue 16: an adjustment moves diamonds from or to outside the ledger with its memo; a
    debit past the balance, a missing reason or a zero amount changes nothing; a retry once."""
    await fund(ledger, ann=500)
    credit = await ledger.adjust("adj:1", "ann", 250, "alice", "goodwill: outage")
    assert credit.kind == "credit" and credit.changes["player:ann"] == [250, 750]
    assert (await ledger.adjust("adj:1", "ann", 250, "alice", "goodwill: outage")).replayed
    before = await _rows(engine)
    for key, amount, reason, code in (
        ("adj:2", -751, "chargeback", "INSUFFICIENT_FUNDS"),
        ("adj:3", -10, "  ", "REASON_REQUIRED"),
        ("adj:4", 0, "nothing", "INVALID_AMOUNT"),
    ):
        with pytest.raises(ServiceError) as refused:
            await ledger.adjust(key, "ann", amount, "alice", reason)
        assert refused.value.code == code
    assert await _rows(engine) == before  # nothing written, not even the operation
    debit = await ledger.adjust("adj:5", "ann", -700, "bob", "chargeback 77")
    assert debit.kind == "debit" and await ledger.balance("ann") == 50
    lines = await ledger.history("ann")
    assert [(e["kind"], e["amount"], e["memo"]) for e in lines[:2]] == [
        ("debit", -700, "bob: chargeback 77"),
        ("credit", 250, "alice: goodwill: outage"),
    ]


async def test_open_escrows_older_than_a_bound_oldest_first(ledger: Ledger) -> None:
    await fund(ledger, ann=1000, bob=1000, cat=1000, dan=1000)
    await ledger.escrow("e1", "m1", ["ann", "bob"], 100)
    await ledger.escrow("e2", "m2", ["cat", "dan"], 200)
    await ledger.refund("r2", "m2")
    rows = await ledger.open_escrows(0)
    assert [(r.match_id, r.stake_a, r.stake_b) for r in rows] == [("m1", 100, 100)]
    assert await ledger.open_escrows(3_600_000) == []  # none opened an hour ago
    with pytest.raises(ServiceError):
        await ledger.open_escrows(0, limit=500)
    await ledger.refund("r1", "m1")
