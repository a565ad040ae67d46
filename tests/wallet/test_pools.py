"""Tournaments' prize pools on SQLite and PostgreSQL (issue 29, wagered tournaments): buy-ins held
at registration, captured at the start, paid out to the ranks less I-11's fee, or refunded;
every refused call changes nothing. The conftest checks the books (a running pool holds its
entrants' buy-ins, the others nothing) after every test."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.connections import sql_engine
from services.common.errors import ServiceError
from services.common.migrate import migrate
from services.contracts import money_keys
from services.matchmaking.bracket import prizes
from services.wallet.app import MIGRATIONS
from services.wallet.ledger import CLOSED, HOUSE, InsufficientFunds, Ledger, check_invariants
from services.wallet.pools import Pools
from services.wallet.schema import accounts, holds
from tests.wallet.conftest import fund

pytestmark = pytest.mark.integration
T = "u1"
BUY_IN = 100


async def _balance(engine: AsyncEngine, account: str) -> int:
    async with engine.connect() as conn:
        found = await conn.scalar(select(accounts.c.balance).where(accounts.c.id == account))
    return int(found or 0)


async def _balances(ledger: Ledger, players: list[str]) -> dict[str, int]:
    return {p: await ledger.balance(p) for p in players}


async def _hold_all(pools: Pools, players: list[str], tournament: str = T) -> None:
    for p in players:
        await pools.hold_buyin(f"buyin:{tournament}:{p}:0", tournament, p, BUY_IN)


async def test_a_field_of_eight_pays_the_pool_less_the_fee_to_the_ranks_once(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    pools = Pools(ledger)
    players = [f"p{i}" for i in range(8)]
    await fund(ledger, **{p: 1000 for p in players})
    await _hold_all(pools, players)
    assert await _balance(engine, f"hold:{T}") == 800 and await ledger.balance("p0") == 900
    held, oldest = await pools.unsettled()  # what the operators' gauges show
    assert held == 800 and oldest is not None
    started = await pools.start("start:u1", T, players)
    assert (await pools.unsettled())[0] == 800
    # I-11 on the pool: 8% of each buy-in, 8 x 8 = 64; the prizes share the other 736.
    assert (started.payout, started.fees, started.stake) == (736, 64, BUY_IN)
    assert await _balance(engine, f"pool:{T}") == 800 and await _balance(engine, f"hold:{T}") == 0
    ranks = {"p3": 1, "p5": 2, "p0": 3, "p7": 3, "p1": 5, "p2": 5, "p4": 5, "p6": 5}
    share = prizes(started.payout, ranks, len(players))
    assert share == {"p3": 516, "p5": 220}  # 70% and 30% of 736, the rounding to the champion
    paid = await pools.pay("prizes:u1", T, share)
    assert (paid.payout, paid.fees) == (736, 64)
    after = await _balances(ledger, players)
    assert after["p3"] == 900 + 516 and after["p5"] == 900 + 220
    assert all(after[p] == 900 for p in players if p not in share)
    assert await _balance(engine, f"pool:{T}") == 0 and await _balance(engine, HOUSE) == 64
    assert await pools.unsettled() == (0, None)
    assert sum(after.values()) + 64 == 8000  # nothing created, nothing lost
    # Once: a retry replays; another key finds the pool paid.
    assert (await pools.pay("prizes:u1", T, share)).replayed
    with pytest.raises(ServiceError) as err:
        await pools.pay("prizes:u1:again", T, share)
    assert err.value.code == "POOL_CLOSED"
    with pytest.raises(ServiceError) as err:
        await pools.refund("refund:u1", T)
    assert err.value.code == "POOL_CLOSED" and await _balances(ledger, players) == after


async def test_the_start_captures_one_buyin_each_and_releases_every_other_hold(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    pools = Pools(ledger)
    await fund(ledger, a=500, b=500, c=500)
    await _hold_all(pools, ["a", "b", "c"])
    # a withdrew and came back (generation 1): the earlier hold is released by the new one.
    await pools.hold_buyin("buyin:u1:a:1", T, "a", BUY_IN)
    assert await ledger.balance("a") == 400 and await _balance(engine, f"hold:{T}") == 300
    await pools.start("start:u1", T, ["a", "b"])  # c is not in the field (registered too late)
    assert await _balances(ledger, ["a", "b", "c"]) == {"a": 400, "b": 400, "c": 500}
    async with engine.connect() as conn:
        rows = (await conn.execute(select(holds.c.hold_key, holds.c.status))).all()
    assert sorted((r.hold_key, r.status) for r in rows) == [
        ("buyin:u1:a:0", "released"), ("buyin:u1:a:1", "captured"),
        ("buyin:u1:b:0", "captured"), ("buyin:u1:c:0", "released"),
    ]  # fmt: skip
    # A registration racing the start: its hold is refused, nothing taken.
    with pytest.raises(ServiceError) as err:
        await pools.hold_buyin("buyin:u1:c:1", T, "c", BUY_IN)
    assert err.value.code == "POOL_CLOSED" and await ledger.balance("c") == 500


async def test_refunds_return_every_buyin_held_or_captured_without_a_fee(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    pools = Pools(ledger)
    await fund(ledger, a=300, b=300, c=300)
    await _hold_all(pools, ["a", "b"], "u-open")
    await pools.refund("refund:u-open", "u-open")  # did not start: the holds are released
    assert await _balances(ledger, ["a", "b"]) == {"a": 300, "b": 300}
    await _hold_all(pools, ["a", "b", "c"], "u-run")
    await pools.start("start:u-run", "u-run", ["a", "b", "c"])
    assert await _balance(engine, "pool:u-run") == 300
    refunded = await pools.refund("refund:u-run", "u-run")  # cancelled mid-way
    assert refunded.changes["pool:u-run"] == [-300, 0]
    assert await _balances(ledger, ["a", "b", "c"]) == {"a": 300, "b": 300, "c": 300}
    assert await _balance(engine, HOUSE) == 0
    # A tournament nobody bought into: refunded all the same, and closed to late holds.
    await pools.refund("refund:u-none", "u-none")
    with pytest.raises(ServiceError) as err:
        await pools.hold_buyin("buyin:u-none:a:0", "u-none", "a", BUY_IN)
    assert err.value.code == "POOL_CLOSED" and await ledger.balance("a") == 300


async def test_a_withdrawal_releases_its_buyin_and_capture_cannot_take_one(
    ledger: Ledger,
) -> None:
    pools = Pools(ledger)
    await fund(ledger, a=300)
    await pools.hold_buyin("buyin:u1:a:0", T, "a", BUY_IN)
    with pytest.raises(ServiceError) as err:
        await ledger.capture("capture:buyin:u1:a:0", "buyin:u1:a:0")
    assert err.value.code == "BUYIN_HOLD" and await ledger.balance("a") == 200
    await ledger.release("release:buyin:u1:a:0", "buyin:u1:a:0")
    assert await ledger.balance("a") == 300


async def test_an_account_closes_only_once_its_tournaments_are_settled(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """A refund or a prize must not land on a closed account: closing is refused while the
    player's buy-in is held (registered) or in a running pool (a prize still possible, even
    once knocked out), and changes nothing; withdrawn or paid, it closes."""
    pools = Pools(ledger)
    await fund(ledger, a=300, b=300, c=300)
    await _hold_all(pools, ["a", "b", "c"])
    before = await _balances(ledger, ["a", "b", "c"])
    with pytest.raises(ServiceError) as err:
        await ledger.close_account("close:a", "a")
    assert (err.value.code, err.value.metadata) == ("IN_TOURNAMENT", {"tournaments": T})
    await ledger.release("release:buyin:u1:c:0", "buyin:u1:c:0")  # c withdraws: free to go
    assert (await ledger.close_account("close:c", "c")).kind == "close"
    assert await ledger.balance("c") == 0 and await _balance(engine, CLOSED) == 300
    await pools.start("start:u1", T, ["a", "b"])
    for p in ("a", "b"):  # b lost the final: the pool still owes the runner-up's share
        with pytest.raises(ServiceError) as err:
            await ledger.close_account(f"close:{p}:running", p)
        assert err.value.code == "IN_TOURNAMENT"
    assert await _balances(ledger, ["a", "b"]) == {"a": before["a"], "b": before["b"]}
    started = await pools.unsettled()
    assert started[0] == 200
    await pools.pay("prizes:u1", T, prizes(184, {"a": 1, "b": 2}, 2))
    assert (await ledger.close_account("close:b", "b")).kind == "close"
    assert await ledger.balance("b") == 0


async def test_a_buyin_racing_the_close_never_strands_diamonds(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """Hold and close at once, on one batch or two: either the close is refused or the hold
    finds no diamonds; never a held buy-in on a closed account."""
    pools = Pools(ledger)
    for i in range(6):
        p = f"r{i}"
        await fund(ledger, **{p: 200})
        hold = pools.hold_buyin(f"buyin:race{i}:{p}:0", f"race{i}", p, BUY_IN)
        close = ledger.close_account(f"close:{p}", p)
        held, closed = await asyncio.gather(hold, close, return_exceptions=True)
        assert isinstance(held, BaseException) != isinstance(closed, BaseException), (held, closed)
        if isinstance(closed, ServiceError):
            assert closed.code == "IN_TOURNAMENT" and await ledger.balance(p) == 100
        else:
            assert isinstance(held, InsufficientFunds) and await ledger.balance(p) == 0


async def test_operators_list_the_pools_not_settled_oldest_first_with_their_diamonds(
    ledger: Ledger,
) -> None:
    pools = Pools(ledger)
    await fund(ledger, a=1000, b=1000, c=1000)
    await _hold_all(pools, ["a", "b"], "t1-run")
    await pools.start("start:t1-run", "t1-run", ["a", "b"])
    await _hold_all(pools, ["a", "b", "c"], "t2-open")
    await _hold_all(pools, ["c"], "t3-gone")
    await pools.refund("refund:t3-gone", "t3-gone")
    listed = await pools.open_pools(0)
    assert [(p.tournament_id, p.status, p.entrants, p.diamonds) for p in listed] == [
        ("t1-run", "running", 2, 200),
        ("t2-open", "open", 0, 300),
    ]  # the refunded pool is settled: not listed
    assert listed[0].created_ms <= listed[1].created_ms and listed[0].buy_in == BUY_IN
    assert await pools.open_pools(60_000) == []  # none a minute old
    assert [p.tournament_id for p in await pools.open_pools(0, limit=1)] == ["t1-run"]
    for bad in ({"older_than_ms": -1}, {"older_than_ms": 0, "limit": 201}):
        with pytest.raises(ServiceError) as err:
            await pools.open_pools(**bad)
        assert err.value.code == "INVALID_LIMIT"


async def test_bad_pool_requests_are_refused_typed_and_change_nothing(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    pools = Pools(ledger)
    await fund(ledger, a=500, b=500, poor=50)
    await _hold_all(pools, ["a", "b"])
    before = await _balances(ledger, ["a", "b", "poor"])
    refused = [
        (pools.hold_buyin("k1", T, "a", 200), "BUYIN_MISMATCH"),
        (pools.hold_buyin("k2", T, "poor", BUY_IN), "INSUFFICIENT_FUNDS"),
        (pools.hold_buyin("k3", T, "nobody", BUY_IN), "UNKNOWN_PLAYER"),
        (pools.hold_buyin("k4", T, "a", 0), "INVALID_AMOUNT"),
        (pools.hold_buyin("k5", "bad id", "a", BUY_IN), "INVALID_ID"),
        (pools.start("k6", T, ["a", "a"]), "INVALID_PLAYERS"),
        (pools.start("k7", T, ["a", "b", "poor"]), "NO_BUYIN"),
        (pools.start("k8", "u-unknown", ["a", "b"]), "UNKNOWN_POOL"),
        (pools.pay("k9", T, {"a": 10}), "POOL_CLOSED"),  # not started
        (pools.refund("k10", "bad id"), "INVALID_ID"),
    ]
    for call, code in refused:
        with pytest.raises(ServiceError) as err:
            await call
        assert err.value.code == code, (code, err.value)
    assert isinstance(err.value, ServiceError)
    started = await pools.start("start:u1", T, ["a", "b"])
    for prizes_, code in [
        ({"a": started.payout - 1}, "PRIZES_MISMATCH"),  # a diamond short
        ({"a": started.payout, "b": 1}, "PRIZES_MISMATCH"),  # a diamond over
        ({"a": started.payout, "poor": 0}, "NOT_ENTERED"),
        ({"a": -1, "b": started.payout + 1}, "INVALID_PRIZES"),
        ({}, "INVALID_PRIZES"),
    ]:
        with pytest.raises(ServiceError) as err:
            await pools.pay(f"pay:{code}:{len(prizes_)}", T, prizes_)
        assert err.value.code == code
    assert await _balances(ledger, ["poor"]) == {"poor": 50}
    assert await _balance(engine, f"pool:{T}") == 200
    assert (await _balances(ledger, ["a", "b"])) == {"a": before["a"], "b": before["b"]}
    with pytest.raises(InsufficientFunds):
        await pools.hold_buyin("k11", "u2", "poor", BUY_IN)


async def test_holds_racing_the_start_are_captured_released_or_refused_never_stranded(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    """Registrations and the start in one burst (one group commit or several): whatever the
    order, no buy-in stays held after the start, and every diamond is where it should be."""
    pools = Pools(ledger)
    players = [f"r{i}" for i in range(12)]
    await fund(ledger, **{p: 1000 for p in players})
    await _hold_all(pools, players[:4])
    calls = [pools.hold_buyin(f"buyin:u1:{p}:0", T, p, BUY_IN) for p in players[4:]]
    results = await asyncio.gather(
        *calls[:4], pools.start("start:u1", T, players[:4]), *calls[4:], return_exceptions=True
    )
    refused = [r for r in results if isinstance(r, ServiceError)]
    assert all(r.code == "POOL_CLOSED" for r in refused)
    assert await _balance(engine, f"hold:{T}") == 0
    assert await _balance(engine, f"pool:{T}") == 400
    assert await _balances(ledger, players) == {
        p: 900 if p in players[:4] else 1000 for p in players
    }


async def test_a_ledger_of_the_earlier_release_upgrades_with_its_holds_kept(
    tmp_path: Path,
) -> None:
    """0006 rebuilds the holds table's purpose check (SQLite copies the table): the rows of
    0005 stay, buy-ins are taken, a purpose outside the list is still refused."""
    old = sql_engine(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
    try:
        await migrate(old, MIGRATIONS, "0005")
        before = Ledger(old)
        await fund(before, a=1000, b=1000)
        await before.escrow("e", "m", ["a", "b"], 100)
        await before.hold_raise(money_keys.raise_hold("m", 1, 2), "m", 2)
        await migrate(old, MIGRATIONS)
        after = Ledger(old)
        await Pools(after).hold_buyin("buyin:u1:a:0", T, "a", BUY_IN)
        async with old.connect() as conn:
            kept = sorted((await conn.execute(select(holds.c.purpose))).scalars())
        assert kept == ["buyin", "raise", "raise"]
        assert await after.balance("a") == 1000 - 100 - 100 - BUY_IN
        with pytest.raises(IntegrityError):
            async with old.begin() as conn:
                await conn.execute(
                    holds.insert().values(
                        hold_key="x", match_id="m", player_id="a", amount=1, purpose="bonus",
                        cube=0, status="held", created_ms=0,
                    )
                )  # fmt: skip
        assert await check_invariants(old) == []
    finally:
        await old.dispose()
