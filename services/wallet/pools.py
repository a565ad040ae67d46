"""Tournaments' prize pools on the ledger (issue 29): buy-ins held at registration, captured into
the pool when the tournament starts, the pool paid out to the final ranks less the house fee,
or every buy-in returned when the tournament does not start or is cancelled.

Accounts: `hold:<tournament>` holds the buy-ins while the tournament registers (holds of
purpose `buyin`, their match id the tournament's id); `pool:<tournament>` holds the captured
buy-ins while it runs. The pool's row (`pools`) says where it is: open (taking holds), running,
then paid or refunded, once. Every operation is one ledger transaction with its idempotency
key, like every other (services/wallet/ledger.py), and the pool's row is locked with it, so:
- a hold placed after the start (a registration racing it) is refused, never stranded: the
  start captured or released every hold there was;
- the start captures exactly one buy-in per player of the field and releases every other hold
  (a withdrawal whose release was lost, a registration refused after its hold);
- the payout drains the pool exactly: the prizes plus the fee must equal what it holds.

The fee is I-11's, per entrant: 8% of each buy-in (buy-ins are multiples of 100, so the fee is
whole). The prize split is the tournament's (services/matchmaking/bracket.py): the pool is told
the amounts and checks they add up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select

from bg.events.v1 import events_pb2
from services.common.clock import now_ms as clock_ms
from services.common.errors import InvalidArgument, NotFound, ServiceError
from services.wallet.batch_books import Books, Draft, Hold, HoldPurpose, HoldStatus, Outcome, Pool
from services.wallet.batch_books import PoolStatus as Status
from services.wallet.batch_sql import Reads
from services.wallet.ledger import (
    HOLD_PREFIX,
    HOUSE,
    POOL_PREFIX,
    Ledger,
    check_amount,
    check_id,
    fee,
    hold_account,
    player_account,
    release_holds,
    take_from,
)
from services.wallet.schema import accounts, pools

MAX_FIELD = 64  # the largest bracket (services/matchmaking/bracket.py)


@dataclass(frozen=True)
class OpenPool:
    """A pool not settled, as operators list it."""

    tournament_id: str
    buy_in: int
    status: Status
    entrants: int
    diamonds: int  # held and captured buy-ins
    created_ms: int


def pool_account(tournament_id: str) -> str:
    return POOL_PREFIX + tournament_id


def _closed(row: Pool) -> ServiceError:
    return ServiceError(
        "POOL_CLOSED",
        f"tournament {row.tournament_id}'s pool is {row.status}",
        pool_status=row.status,  # not `status`: that is the gRPC code
    )


def _buyins(b: Books, tournament_id: str, status: HoldStatus) -> list[Hold]:
    return [
        h
        for h in b.holds
        if h.match_id == tournament_id and h.purpose == HoldPurpose.BUYIN and h.status == status
    ]


def _event(tournament_id: str) -> events_pb2.WalletEvent:
    return events_pb2.WalletEvent(tournament_id=tournament_id)


class Pools:
    """The pool operations, each submitted to the ledger's batches."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def unsettled(self) -> tuple[int, int | None]:
        """(diamonds in pools open or running: buy-ins held or captured, the created_ms of the
        oldest such pool or None): the operators' view of money the director has yet to pay out
        or give back."""
        live = pools.c.status.in_((Status.OPEN, Status.RUNNING))
        ids = (
            select(HOLD_PREFIX + pools.c.tournament_id)
            .where(live)
            .union_all(select(POOL_PREFIX + pools.c.tournament_id).where(live))
        )
        async with self.ledger.engine.connect() as conn:
            held = await conn.scalar(
                select(func.coalesce(func.sum(accounts.c.balance), 0)).where(accounts.c.id.in_(ids))
            )
            oldest = await conn.scalar(select(func.min(pools.c.created_ms)).where(live))
        return int(held or 0), None if oldest is None else int(oldest)

    async def open_pools(
        self, older_than_ms: int, limit: int = 50, now_ms: int | None = None
    ) -> list[OpenPool]:
        """Pools not settled whose first buy-in is at least `older_than_ms` old, oldest first,
        with the diamonds each holds: for operators (a pool only the director settles, whose
        tournament is gone, shows here)."""
        limit = 50 if limit == 0 else limit
        if not 1 <= limit <= 200 or older_than_ms < 0:
            raise InvalidArgument("INVALID_LIMIT", "limit 1..200, age >= 0", field="limit")
        cutoff = (clock_ms() if now_ms is None else now_ms) - older_than_ms
        held = accounts.alias("held")
        pooled = accounts.alias("pooled")
        query = (
            select(pools, func.coalesce(held.c.balance, 0) + func.coalesce(pooled.c.balance, 0))
            .outerjoin(held, held.c.id == HOLD_PREFIX + pools.c.tournament_id)
            .outerjoin(pooled, pooled.c.id == POOL_PREFIX + pools.c.tournament_id)
            .where(pools.c.status.in_((Status.OPEN, Status.RUNNING)))
            .where(pools.c.created_ms <= cutoff)
            .order_by(pools.c.created_ms, pools.c.tournament_id)
            .limit(limit)
        )
        async with self.ledger.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [
            OpenPool(
                r.tournament_id,
                int(r.buy_in),
                Status(r.status),
                int(r.entrants),
                int(r[-1]),
                int(r.created_ms),
            )
            for r in rows
        ]

    @property
    def fee_bps(self) -> int:
        return self.ledger.fee_bps

    async def hold_buyin(
        self, key: str, tournament_id: str, player_id: str, amount: int
    ) -> Outcome:
        """Hold a player's buy-in. The first hold opens the pool at its amount; later ones must
        bring the same. A player holds one buy-in per tournament: an earlier one still open (a
        withdrawal whose release was lost) is released by this one."""
        check_id("tournament_id", tournament_id)
        check_id("player_id", player_id)
        check_amount("amount", amount)
        hold = hold_account(tournament_id)

        def rules(b: Books, op: Draft) -> Outcome:
            row = b.pool(tournament_id)
            if row is None:
                row = Pool(tournament_id, amount, Status.OPEN, 0, op.now)
                b.add_pool(row)
            if row.status != Status.OPEN:
                raise _closed(row)
            if row.buy_in != amount:
                raise InvalidArgument(
                    "BUYIN_MISMATCH", f"the buy-in is {row.buy_in}, not {amount}", field="amount"
                )
            earlier = [
                h for h in _buyins(b, tournament_id, HoldStatus.HELD) if h.player_id == player_id
            ]
            release_holds(b, op, tournament_id, earlier)
            b.ensure(hold, "hold")
            take_from(b, op, player_id, hold, amount)
            b.add_hold(
                Hold(
                    None,
                    key,
                    tournament_id,
                    player_id,
                    amount,
                    HoldPurpose.BUYIN,
                    0,
                    HoldStatus.HELD,
                    op.now,
                )
            )
            return b.finish(op, Outcome(0, op.kind, stake=amount), _event(tournament_id), hold)

        params = {"t": tournament_id, "p": player_id, "a": amount}
        reads = Reads((player_account(player_id),), pools=(tournament_id,))
        return await self.ledger.submit(key, "hold_buyin", params, rules, reads)

    async def start(self, key: str, tournament_id: str, players: Sequence[str]) -> Outcome:
        """The tournament starts with `players`: capture one buy-in of each into the pool,
        release every other hold, and close the pool to new holds. The answer's `payout` is
        the prize money (the pool less the fee), `fees` the house's, `stake` the buy-in."""
        check_id("tournament_id", tournament_id)
        field = list(players)
        for p in field:
            check_id("player_ids", p)
        if not 2 <= len(field) <= MAX_FIELD or len(set(field)) != len(field):
            raise InvalidArgument(
                "INVALID_PLAYERS",
                f"a field of 2..{MAX_FIELD} different players",
                field="player_ids",
            )
        hold, pool = hold_account(tournament_id), pool_account(tournament_id)

        def rules(b: Books, op: Draft) -> Outcome:
            row = b.pool(tournament_id)
            if row is None:
                raise NotFound("UNKNOWN_POOL", f"no buy-in was held for {tournament_id}")
            if row.status != Status.OPEN:
                raise _closed(row)
            held = _buyins(b, tournament_id, HoldStatus.HELD)
            taken: dict[str, Hold] = {}
            for h in held:
                if h.player_id in field and h.player_id not in taken:
                    taken[h.player_id] = h
            missing = [p for p in field if p not in taken]
            if missing:
                raise ServiceError(
                    "NO_BUYIN",
                    "no buy-in is held for: " + ", ".join(missing),
                    players=",".join(missing),
                )
            b.ensure(pool, "pool")
            for h in taken.values():
                b.move(op, hold, pool, h.amount)
                b.close_hold(h, HoldStatus.CAPTURED, op)
            release_holds(b, op, tournament_id, [h for h in held if h not in taken.values()])
            b.change_pool(row, status=Status.RUNNING, entrants=len(field))
            fees = fee(row.buy_in, self.fee_bps) * len(field)
            total = row.buy_in * len(field)
            outcome = Outcome(0, op.kind, payout=total - fees, fees=fees, stake=row.buy_in)
            return b.finish(op, outcome, _event(tournament_id), pool)

        params = {"t": tournament_id, "p": field}
        return await self.ledger.submit(
            key, "start_pool", params, rules, Reads(pools=(tournament_id,))
        )

    async def pay(self, key: str, tournament_id: str, prizes: Mapping[str, int]) -> Outcome:
        """Pay the pool out: each prize to its player (an entrant), the fee to the house. The
        prizes must add up to the pool less the fee, to the diamond (PRIZES_MISMATCH)."""
        check_id("tournament_id", tournament_id)
        if not prizes or len(prizes) > MAX_FIELD:
            raise InvalidArgument("INVALID_PRIZES", "1..64 prizes", field="prizes")
        for player, amount in prizes.items():
            check_id("prizes", player)
            if amount < 0:
                raise InvalidArgument(
                    "INVALID_PRIZES", "a prize cannot be negative", field="prizes"
                )
        pool = pool_account(tournament_id)

        def rules(b: Books, op: Draft) -> Outcome:
            row = b.pool(tournament_id)
            if row is None:
                raise NotFound("UNKNOWN_POOL", f"no pool for {tournament_id}")
            if row.status != Status.RUNNING:
                raise _closed(row)
            entrants = {h.player_id for h in _buyins(b, tournament_id, HoldStatus.CAPTURED)}
            strangers = sorted(set(prizes) - entrants)
            if strangers:
                raise InvalidArgument(
                    "NOT_ENTERED", "not in the field: " + ", ".join(strangers), field="prizes"
                )
            fees = fee(row.buy_in, self.fee_bps) * row.entrants
            held = b.balance(pool) or 0
            if sum(prizes.values()) + fees != held:
                raise InvalidArgument(
                    "PRIZES_MISMATCH",
                    f"the prizes add up to {sum(prizes.values())}; the pool pays {held - fees}",
                    field="prizes",
                )
            b.ensure(HOUSE, "house")
            for player, amount in sorted(prizes.items()):
                if amount:
                    b.ensure(player_account(player), "player")
                    b.move(op, pool, player_account(player), amount)
            if fees:
                b.move(op, pool, HOUSE, fees)
            b.change_pool(row, status=Status.PAID, closed_by=op)
            outcome = Outcome(0, op.kind, payout=held - fees, fees=fees, stake=row.buy_in)
            return b.finish(op, outcome, _event(tournament_id), pool)

        params = {"t": tournament_id, "p": dict(sorted(prizes.items()))}
        reads = Reads((HOUSE, *(player_account(p) for p in prizes)), pools=(tournament_id,))
        return await self.ledger.submit(key, "pay_prizes", params, rules, reads)

    async def refund(self, key: str, tournament_id: str) -> Outcome:
        """Give every buy-in back: the held ones released, the captured ones paid back from the
        pool; no fee. A tournament no buy-in was ever held for gets a closed pool, so a hold
        racing the refund is refused rather than stranded."""
        check_id("tournament_id", tournament_id)
        pool = pool_account(tournament_id)

        def rules(b: Books, op: Draft) -> Outcome:
            row = b.pool(tournament_id)
            if row is None:
                row = Pool(tournament_id, 0, Status.OPEN, 0, op.now)
                b.add_pool(row)
            if row.status not in (Status.OPEN, Status.RUNNING):
                raise _closed(row)
            release_holds(b, op, tournament_id, _buyins(b, tournament_id, HoldStatus.HELD))
            for h in _buyins(b, tournament_id, HoldStatus.CAPTURED):
                b.move(op, pool, player_account(h.player_id), h.amount)
            b.change_pool(row, status=Status.REFUNDED, closed_by=op)
            return b.finish(op, Outcome(0, op.kind), _event(tournament_id), pool)

        reads = Reads(pools=(tournament_id,))
        return await self.ledger.submit(key, "refund_pool", {"t": tournament_id}, rules, reads)
