"""The fault tests' books: wait for every escrow and hold to close, then work out every
player's balance to the diamond from the tables' side alone and hold the ledger to it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from bg.table.v1 import table_pb2
from services.common.connections import sql_engine
from services.wallet.ledger import check_invariants
from services.wallet.schema import escrows, holds, operations, transfers

OutcomeState = table_pb2.MatchOutcome.State
FEE_BPS = 800  # I-11


@dataclass
class ExpectedBalances:
    """What the tables' outcomes say each balance must be, beside the closed escrows (not the
    wallet's own `Books`)."""

    closed: list[Any]  # every escrow row, all closed
    expected: dict[str, int]  # player id -> balance, from the tables' outcomes


async def settle_down(wallet_url: str, until: float) -> tuple[int, int]:
    """Wait for every escrow and hold to close (clocks end abandoned matches, the consumer and
    the reconciler settle). Returns (open escrows, open holds) at the end."""
    engine = sql_engine(wallet_url)
    try:
        while True:
            try:
                async with engine.connect() as conn:
                    open_escrows = int(
                        await conn.scalar(
                            select(func.count())
                            .select_from(escrows)
                            .where(escrows.c.status == "open")
                        )
                        or 0
                    )
                    open_holds = int(
                        await conn.scalar(
                            select(func.count()).select_from(holds).where(holds.c.status == "held")
                        )
                        or 0
                    )
            except Exception:  # the database restarting: ask again
                open_escrows = open_holds = -1
            if (open_escrows == 0 and open_holds == 0) or time.monotonic() > until:
                return open_escrows, open_holds
            await asyncio.sleep(1.0)
    finally:
        await engine.dispose()


async def books(wallet_url: str, tables: Any, funds: dict[str, int], bet: int) -> ExpectedBalances:
    """The ledger checked (its invariants) and every player's balance worked out: a settled
    match moves bet x final cube from loser to winner less 8% of each side (I-11), a refunded
    one nothing (I-10); an applied boost costs 10. Each escrow closed once, as its table says
    the match went."""
    engine = sql_engine(wallet_url)
    try:
        assert await check_invariants(engine) == []
        async with engine.connect() as conn:
            closed = (await conn.execute(select(escrows))).all()
            payouts = (
                await conn.execute(
                    select(transfers.c.debit, transfers.c.credit)
                    .join(operations, operations.c.id == transfers.c.operation_id)
                    .where(operations.c.kind == "settle")
                )
            ).all()
    finally:
        await engine.dispose()
    winners = {
        t.debit.removeprefix("escrow:"): t.credit.removeprefix("player:")
        for t in payouts
        if t.credit.startswith("player:")
    }
    expected = dict(funds)
    for e in closed:
        table_id = e.match_id.rsplit("-", 1)[0]
        outcome = await tables.GetMatchOutcome(
            table_pb2.GetMatchOutcomeRequest(table_id=table_id, match_id=e.match_id)
        )
        seats = [e.player_a, e.player_b]
        for key in outcome.applied_boosts:  # boost:<match>:<game>:<seat>:<n>
            expected[seats[int(key.split(":")[-2])]] -= 10
        if e.status == "settled":
            assert outcome.state == OutcomeState.STATE_ENDED, e.match_id
            assert winners[e.match_id] == outcome.winner_id, e.match_id
            stake = bet * outcome.cube
            loser = seats[1 - seats.index(outcome.winner_id)]
            expected[outcome.winner_id] += stake - 2 * (stake * FEE_BPS // 10_000)
            expected[loser] -= stake
        else:
            assert e.status == "refunded", (e.match_id, e.status)
            assert outcome.state in (OutcomeState.STATE_CLOSED, OutcomeState.STATE_UNKNOWN)
    return ExpectedBalances(list(closed), expected)
