"""The ledger: every money movement is double-entry transfers in an SQL transaction.

Operations are committed in batches (group commit): the calls waiting when a batch starts are
taken together, up to `max_batch`, into one transaction that (1) answers replayed idempotency
keys with their stored answers, (2) reads and locks every escrow, hold and account they can
touch (PostgreSQL: FOR UPDATE, in one order for every replica; SQLite: one writer at a time),
(3) applies the operations one after another to those rows in memory (`books.Books`): one the
rules refuse changes nothing and gets its typed error, the others stay, and (4) writes what
they changed, each table in one statement, with their outbox events and answers. A batch never
waits for more work: alone, a call is a batch of one. An error of the database rolls the whole
batch back: no diamond is created, lost or paid twice; a lost unique race (the same key or
match on another replica) runs the batch again, seeing what won.

Holds: a double's raise is held at the offer (both players' current stakes) and captured into
the escrow at the take, so a take needs no wallet call and a wallet outage can never turn it into
a drop; a boost's price is held before the boost is committed and captured (to the house) only
once it was applied. A hold not captured is released; settlement and refund resolve every hold
still open, so none outlives its match.

Invariants (`check_invariants`): the balances of all accounts but `external` add up to minus
`external`'s balance (the total ever deposited); no player, escrow or hold below zero; every
escrow closed at most once, and holding exactly its stakes while open; every hold account holding
exactly its open holds; every running prize pool holding exactly its entrants' buy-ins, and
every other pool nothing (services/wallet/pools.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bg.events.v1 import events_pb2
from services.common.clock import now_ms
from services.common.errors import Conflict, InvalidArgument, NotFound, ServiceError
from services.wallet.batch_books import (
    Books,
    Draft,
    Escrow,
    EscrowStatus,
    Hold,
    HoldPurpose,
    HoldStatus,
    InsufficientFunds,
    Outcome,
    PoolStatus,
)
from services.wallet.batch_sql import Reads, Stored, load_books, load_operations, save
from services.wallet.schema import accounts, escrows, holds, operations, pools, transfers

__all__ = ["InsufficientFunds", "Ledger", "Outcome", "check_invariants"]

HOUSE = "house"
EXTERNAL = "external"
CLOSED = "closed-accounts"  # the diamonds of deleted accounts: kept, no longer anybody's
MAX_ID = 120
MAX_BATCH = 64  # operations in one transaction: bounds a batch's statements and its locks


def player_account(player_id: str) -> str:
    return f"player:{player_id}"


ESCROW_PREFIX = "escrow:"  # a match's pot: ESCROW_PREFIX + match id
HOLD_PREFIX = "hold:"  # a match's raise and boost holds (a tournament's buy-ins): + its id
POOL_PREFIX = "pool:"  # a running tournament's prize pool: POOL_PREFIX + tournament id


def escrow_account(match_id: str) -> str:
    return ESCROW_PREFIX + match_id


def hold_account(match_id: str) -> str:
    return HOLD_PREFIX + match_id


def fee(stake: int, fee_bps: int) -> int:
    """House fee on one side's final stake (I-11: 8% = 800 bps; stakes are multiples of 100,
    so the fee is whole; any remainder is rounded down, in the player's favour)."""
    return stake * fee_bps // 10_000


def _now_ms() -> int:
    return now_ms()


def check_id(name: str, value: str) -> str:
    if not value or len(value) > MAX_ID or any(c.isspace() for c in value) or ":" in value:
        raise InvalidArgument(
            "INVALID_ID", f"{name} must be 1..{MAX_ID} characters, no spaces or ':'", field=name
        )
    return value


def check_amount(name: str, value: int) -> int:
    if value <= 0:
        raise InvalidArgument("INVALID_AMOUNT", f"{name} must be positive, got {value}", field=name)
    return value


Rules = Callable[[Books, Draft], Outcome]


@dataclass
class _Call:
    """One operation waiting for its batch."""

    key: str
    kind: str
    request_hash: str
    rules: Rules
    reads: Reads
    match_id: str | None
    memo: str | None
    future: asyncio.Future[Outcome] = field(init=False, repr=False)


def take_from(b: Books, op: Draft, player_id: str, to: str, amount: int) -> None:
    """Move `amount` from a player to `to`, refusing an unknown player or a short one."""
    acct = player_account(player_id)
    balance = b.balance(acct)
    if balance is None:
        raise NotFound("UNKNOWN_PLAYER", f"no account for player {player_id}", field="player_id")
    if balance < amount:
        raise InsufficientFunds([player_id])
    b.move(op, acct, to, amount)


def _capture(b: Books, op: Draft, match_id: str, rows: Sequence[Hold]) -> None:
    hold, pot = hold_account(match_id), escrow_account(match_id)
    raises = [r for r in rows if r.purpose == HoldPurpose.RAISE]
    if raises:
        row = b.open_escrow(match_id)
        extra = {row.player_a: 0, row.player_b: 0}
        for r in raises:
            b.move(op, hold, pot, r.amount)
            extra[r.player_id] += r.amount
        b.change_escrow(
            row,
            stake_a=row.stake_a + extra[row.player_a],
            stake_b=row.stake_b + extra[row.player_b],
        )
    boosts = [r for r in rows if r.purpose == "boost"]
    if boosts:
        b.ensure(HOUSE, "house")
        for r in boosts:
            b.move(op, hold, HOUSE, r.amount)
    for r in rows:
        b.close_hold(r, HoldStatus.CAPTURED, op)


def release_holds(b: Books, op: Draft, match_id: str, rows: Sequence[Hold]) -> None:
    for r in rows:
        b.move(op, hold_account(match_id), player_account(r.player_id), r.amount)
        b.close_hold(r, HoldStatus.RELEASED, op)


def _resolve_holds(
    b: Books, op: Draft, match_id: str, cube: int, applied_boosts: Sequence[str]
) -> None:
    """Before an escrow closes: capture the raises of doubles taken (their cube is within the
    match's final `cube`) and the boosts applied; release every other open hold."""
    rows = b.open_holds_of(match_id)
    applied = set(applied_boosts)
    taken = [
        r
        for r in rows
        if (r.purpose == HoldPurpose.RAISE and 0 < r.cube <= cube)
        or (r.purpose == "boost" and r.hold_key in applied)
    ]
    rest = [r for r in rows if r not in taken]
    if taken:
        _capture(b, op, match_id, taken)
    if rest:
        release_holds(b, op, match_id, rest)


def _ignore(_: object) -> None:
    pass


class Ledger:
    """`on_operation` is told of each operation done (not replayed), `on_batch` of each group
    commit's size: the service's metrics."""

    def __init__(
        self,
        engine: AsyncEngine,
        fee_bps: int = 800,
        max_batch: int = MAX_BATCH,
        on_operation: Callable[[Outcome], None] = _ignore,
        on_batch: Callable[[int], None] = _ignore,
    ) -> None:
        self.engine = engine
        self.fee_bps = fee_bps
        self.max_batch = max_batch
        self._sqlite = engine.dialect.name == "sqlite"
        self._writer = asyncio.Lock()  # SQLite has one writer; queue them here, not in the file
        self._waiting: list[_Call] = []
        self._committer: asyncio.Task[None] | None = None
        self.on_operation = on_operation
        self.on_batch = on_batch

    # -- reads -------------------------------------------------------------------------------

    async def balance(self, player_id: str) -> int:
        async with self.engine.connect() as conn:
            value = await conn.scalar(
                select(accounts.c.balance).where(accounts.c.id == player_account(player_id))
            )
        return int(value or 0)

    async def history(
        self, player_id: str, limit: int = 50, before_id: int = 0
    ) -> list[dict[str, Any]]:
        acct = player_account(check_id("player_id", player_id))
        limit = 50 if limit == 0 else limit
        if not 1 <= limit <= 200:
            raise InvalidArgument("INVALID_LIMIT", "limit must be 1..200", field="limit")
        query = (
            select(transfers, operations.c.kind, operations.c.match_id, operations.c.memo)
            .join(operations, operations.c.id == transfers.c.operation_id)
            .where(or_(transfers.c.debit == acct, transfers.c.credit == acct))
            .order_by(transfers.c.id.desc())
            .limit(limit)
        )
        if before_id:
            query = query.where(transfers.c.id < before_id)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        out = []
        for r in rows:
            outgoing = r["debit"] == acct
            out.append(
                {
                    "id": r["id"],
                    "kind": r["kind"],
                    "amount": -r["amount"] if outgoing else r["amount"],
                    "counterparty": r["credit"] if outgoing else r["debit"],
                    "match_id": r["match_id"] or "",
                    "at_ms": r["created_ms"],
                    "memo": r["memo"] or "",
                }
            )
        return out

    async def has_escrow(self, match_id: str) -> bool:
        """Whether the match was dealt with stakes (a wagered match's escrow, open or closed)."""
        async with self.engine.connect() as conn:
            found = await conn.scalar(
                select(escrows.c.match_id).where(escrows.c.match_id == match_id)
            )
        return found is not None

    async def open_escrow_total(self) -> int:
        async with self.engine.connect() as conn:
            total = await conn.scalar(
                select(func.coalesce(func.sum(escrows.c.stake_a + escrows.c.stake_b), 0)).where(
                    escrows.c.status == EscrowStatus.OPEN
                )
            )
        return int(total or 0)

    async def open_escrows(
        self, older_than_ms: int, limit: int = 50, now_ms: int | None = None
    ) -> list[Any]:
        """Escrows still open that were opened at least `older_than_ms` before `now_ms` (the
        clock's now by default), oldest first: for operators and the reconciler."""
        limit = 50 if limit == 0 else limit
        if not 1 <= limit <= 200 or older_than_ms < 0:
            raise InvalidArgument("INVALID_LIMIT", "limit 1..200, age >= 0", field="limit")
        cutoff = (_now_ms() if now_ms is None else now_ms) - older_than_ms
        query = (
            select(escrows)
            .where(escrows.c.status == EscrowStatus.OPEN, escrows.c.created_ms <= cutoff)
            .order_by(escrows.c.created_ms)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            return list((await conn.execute(query)).all())

    # -- the batch frame ---------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        if self._sqlite:
            async with self._writer, self.engine.begin() as conn:
                yield conn
        else:
            async with self.engine.begin() as conn:
                yield conn

    async def submit(  # the operations here and services/wallet/pools.py's
        self,
        key: str,
        kind: str,
        params: dict[str, Any],
        rules: Rules,
        reads: Reads,
        match_id: str | None = None,
        memo: str | None = None,
    ) -> Outcome:
        if not key or len(key) > 200:
            raise InvalidArgument(
                "INVALID_IDEMPOTENCY_KEY",
                "idempotency_key must be 1..200 characters",
                field="idempotency_key",
            )
        request_hash = hashlib.sha256(
            json.dumps([kind, params], sort_keys=True).encode()
        ).hexdigest()
        call = _Call(key, kind, request_hash, rules, reads, match_id, memo)
        call.future = asyncio.get_running_loop().create_future()
        self._waiting.append(call)
        if self._committer is None or self._committer.done():
            self._committer = asyncio.create_task(self._commit_waiting())
        # A caller that goes away does not stop its operation: the batch runs to its end.
        return await asyncio.shield(call.future)

    async def _commit_waiting(self) -> None:
        """Batches of the calls waiting, until none wait. One key appears once in a batch: a
        repeat waits for the next one, where it is answered as a replay."""
        while self._waiting:
            batch: list[_Call] = []
            later: list[_Call] = []
            keys: set[str] = set()
            for call in self._waiting:
                if call.key in keys or len(batch) >= self.max_batch:
                    later.append(call)
                else:
                    batch.append(call)
                    keys.add(call.key)
            self._waiting = later
            await self._commit_batch(batch)

    async def _commit_batch(self, batch: list[_Call]) -> None:
        self.on_batch(len(batch))
        for attempt in range(3):
            try:
                results = await self._transaction(batch)
                break
            except IntegrityError as err:
                # Another replica won a unique key (the same idempotency key, an escrow of the
                # same match, a new account): run again, now seeing what it wrote; alone, so
                # the others of the batch do not fail with one.
                if attempt < 2:
                    continue
                if len(batch) > 1:
                    for call in batch:
                        await self._commit_batch([call])
                    return
                _fail(batch, err)
                return
            except BaseException as err:  # the database went away: nothing of it was written
                _fail(batch, err)
                if not isinstance(err, Exception):
                    raise
                return
        for call, result in zip(batch, results, strict=True):
            if call.future.done():
                continue
            if isinstance(result, ServiceError):
                call.future.set_exception(result)
            else:
                if not result.replayed:
                    self.on_operation(result)
                call.future.set_result(result)

    async def _transaction(self, batch: list[_Call]) -> list[Outcome | ServiceError]:
        async with self._write() as conn:
            stored = await load_operations(conn, [c.key for c in batch])
            fresh = [c for c in batch if c.key not in stored]
            books = await load_books(conn, [c.reads for c in fresh]) if fresh else None
            now = _now_ms()
            results: list[Outcome | ServiceError | Draft] = []
            drafts: list[Draft] = []
            for call in batch:
                if (row := stored.get(call.key)) is not None:
                    results.append(_replay(call, row))
                    continue
                assert books is not None
                op = Draft(call.key, call.kind, call.request_hash, call.match_id, call.memo, now)
                mark = books.mark()
                try:
                    call.rules(books, op)
                except ServiceError as err:
                    books.undo(mark)
                    results.append(err)
                    continue
                drafts.append(op)
                results.append(op)
            if drafts and books is not None:
                await save(conn, books, drafts)
        return [r.outcome if isinstance(r, Draft) and r.outcome else r for r in results]  # type: ignore[misc]

    # -- operations --------------------------------------------------------------------------

    async def deposit(self, key: str, player_id: str, amount: int, reason: str = "") -> Outcome:
        check_id("player_id", player_id)
        check_amount("amount", amount)
        acct = player_account(player_id)

        def rules(b: Books, op: Draft) -> Outcome:
            b.ensure(EXTERNAL, "external")
            b.ensure(acct, "player")
            b.move(op, EXTERNAL, acct, amount)
            return b.finish(op, Outcome(0, op.kind), events_pb2.WalletEvent(), acct)

        params = {"p": player_id, "a": amount, "r": reason}
        return await self.submit(key, "deposit", params, rules, Reads((EXTERNAL, acct)))

    async def adjust(
        self, key: str, player_id: str, amount: int, operator: str, reason: str
    ) -> Outcome:
        """An operator's credit (amount > 0, from outside) or debit (amount < 0, to outside);
        the operation keeps "<operator>: <reason>". A debit beyond the balance changes nothing
        (INSUFFICIENT_FUNDS)."""
        check_id("player_id", player_id)
        check_amount("amount", abs(amount))
        if not operator or not 1 <= len(reason.strip()) <= 200:
            raise InvalidArgument(
                "REASON_REQUIRED",
                "an adjustment names its operator and a reason (1..200)",
                field="reason",
            )
        acct = player_account(player_id)

        def rules(b: Books, op: Draft) -> Outcome:
            b.ensure(EXTERNAL, "external")
            b.ensure(acct, "player")
            if amount > 0:
                b.move(op, EXTERNAL, acct, amount)
            else:
                take_from(b, op, player_id, EXTERNAL, -amount)
            return b.finish(op, Outcome(0, op.kind), events_pb2.WalletEvent(), acct)

        kind = "credit" if amount > 0 else "debit"
        memo = f"{operator}: {reason.strip()}"
        params = {"p": player_id, "a": amount, "o": operator, "r": reason}
        return await self.submit(key, kind, params, rules, Reads((EXTERNAL, acct)), memo=memo)

    async def close_account(self, key: str, player_id: str) -> Outcome:
        """A deleted account's diamonds go to CLOSED: the books stay whole and its history
        stays. Refused while the player has stakes in a match in play (IN_PLAY) or a buy-in in a
        wagered tournament not yet settled (IN_TOURNAMENT)."""
        check_id("player_id", player_id)
        acct = player_account(player_id)

        def rules(b: Books, op: Draft) -> Outcome:
            if any(
                e.status == EscrowStatus.OPEN and player_id in (e.player_a, e.player_b)
                for e in b.escrows.values()
            ):
                raise ServiceError(
                    "IN_PLAY", "a match with stakes is in play: finish it first", field="player_id"
                )
            entered = b.entered.get(player_id, set()) | {
                h.match_id  # a buy-in held earlier in this batch
                for h in b.holds
                if h.player_id == player_id
                and h.purpose == HoldPurpose.BUYIN
                and h.status == HoldStatus.HELD
            }
            if entered:
                # Its refund or its prize would land on a closed account.
                raise ServiceError(
                    "IN_TOURNAMENT",
                    "a wagered tournament holds your buy-in: withdraw or wait for its end",
                    field="player_id",
                    tournaments=",".join(sorted(entered)),
                )
            b.ensure(CLOSED, "closed")
            b.ensure(acct, "player")
            balance = b.balance(acct) or 0
            if balance > 0:
                b.move(op, acct, CLOSED, balance)
            return b.finish(op, Outcome(0, op.kind), events_pb2.WalletEvent(), acct)

        reads = Reads((acct, CLOSED), in_play_of=player_id)
        return await self.submit(key, "close", {"p": player_id}, rules, reads)

    async def escrow(self, key: str, match_id: str, players: Sequence[str], stake: int) -> Outcome:
        check_id("match_id", match_id)
        if len(players) != 2 or players[0] == players[1]:
            raise InvalidArgument(
                "INVALID_PLAYERS", "an escrow takes two different players", field="player_ids"
            )
        for p in players:
            check_id("player_ids", p)
        check_amount("stake", stake)
        pa, pb = (player_account(p) for p in players)
        pot = escrow_account(match_id)

        def rules(b: Books, op: Draft) -> Outcome:
            if b.escrow(match_id) is not None:
                raise Conflict(
                    "ESCROW_EXISTS", f"match {match_id} already has an escrow", field="match_id"
                )
            short = [
                p
                for p, acct in zip(players, (pa, pb), strict=True)
                if (b.balance(acct) or 0) < stake
            ]
            if short:
                raise InsufficientFunds(short)
            b.ensure(pot, "escrow")
            b.add_escrow(
                Escrow(
                    match_id, players[0], players[1], stake, stake, stake, EscrowStatus.OPEN, op.now
                )
            )
            b.move(op, pa, pot, stake)
            b.move(op, pb, pot, stake)
            outcome = Outcome(0, op.kind, stake=stake)
            return b.finish(
                op, outcome, events_pb2.WalletEvent(match_id=match_id, stake=stake), pot
            )

        params = {"m": match_id, "p": list(players), "s": stake}
        return await self.submit(
            key, "escrow", params, rules, Reads((pa, pb), (match_id,)), match_id
        )

    async def hold_raise(self, key: str, match_id: str, cube: int) -> Outcome:
        """A double to `cube` is offered: hold what each stake grows by (I-4: both must cover
        it), captured into the escrow if the double is taken, released if not. The raise is
        bet x cube/2 from the bet, not the stakes: a take's capture may still be on its way (the
        table captures after its commit, best effort) when the next double is offered."""
        check_id("match_id", match_id)
        if cube < 2 or cube & (cube - 1):
            raise InvalidArgument(
                "INVALID_CUBE", "a raise doubles the cube to a power of two from 2", field="cube"
            )
        hold = hold_account(match_id)

        def rules(b: Books, op: Draft) -> Outcome:
            row = b.open_escrow(match_id)
            b.ensure(hold, "hold")
            amount = (row.bet or row.stake_a) * (cube // 2)
            sides = (
                (row.player_a, player_account(row.player_a)),
                (row.player_b, player_account(row.player_b)),
            )
            short = [p for p, acct in sides if (b.balance(acct) or 0) < amount]
            if short:
                raise InsufficientFunds(short)
            for player, acct in sides:
                b.move(op, acct, hold, amount)
                b.add_hold(
                    Hold(
                        None,
                        key,
                        match_id,
                        player,
                        amount,
                        HoldPurpose.RAISE,
                        cube,
                        HoldStatus.HELD,
                        op.now,
                    )
                )
            outcome = Outcome(0, op.kind, stake=amount)
            event = events_pb2.WalletEvent(match_id=match_id, stake=amount)
            return b.finish(op, outcome, event, hold)

        params = {"m": match_id, "c": cube}
        return await self.submit(key, "hold_raise", params, rules, Reads((), (match_id,)), match_id)

    async def hold_spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> Outcome:
        """A boost is asked for: hold its price until it is applied (captured, to the house) or
        not (released): a boost is charged only if it happened."""
        check_id("player_id", player_id)
        check_id("match_id", match_id)
        check_amount("amount", amount)
        acct, hold = player_account(player_id), hold_account(match_id)

        def rules(b: Books, op: Draft) -> Outcome:
            b.ensure(hold, "hold")
            take_from(b, op, player_id, hold, amount)
            b.add_hold(
                Hold(
                    None,
                    key,
                    match_id,
                    player_id,
                    amount,
                    HoldPurpose.BOOST,
                    0,
                    HoldStatus.HELD,
                    op.now,
                )
            )
            return b.finish(
                op, Outcome(0, op.kind), events_pb2.WalletEvent(match_id=match_id), acct
            )

        params = {"p": player_id, "a": amount, "r": reason, "m": match_id}
        reads = Reads((acct,), (match_id,))
        return await self.submit(key, "hold_spend", params, rules, reads, match_id)

    async def capture(self, key: str, hold_key: str) -> Outcome:
        """Spend what `hold_key` holds: a raise into its escrow (the stakes grow), a boost to
        the house. A hold already captured or released is refused (HOLD_CLOSED)."""
        return await self._close_hold(key, hold_key, "capture")

    async def release(self, key: str, hold_key: str) -> Outcome:
        """Give back what `hold_key` holds (a double not taken, a boost not applied)."""
        return await self._close_hold(key, hold_key, "release")

    async def _close_hold(self, key: str, hold_key: str, how: str) -> Outcome:
        if not hold_key or len(hold_key) > 200:
            raise InvalidArgument(
                "INVALID_HOLD_KEY", "hold_key must be 1..200 characters", field="hold_key"
            )

        def rules(b: Books, op: Draft) -> Outcome:
            rows = b.holds_of_key(hold_key)
            if not rows:
                raise NotFound("UNKNOWN_HOLD", f"no hold {hold_key}", field="hold_key")
            closed = {r.status for r in rows if r.status != HoldStatus.HELD}
            if closed:
                raise Conflict("HOLD_CLOSED", f"hold {hold_key} is already {closed.pop()}")
            if how == "capture" and any(r.purpose == HoldPurpose.BUYIN for r in rows):
                raise InvalidArgument(
                    "BUYIN_HOLD",
                    "a buy-in is captured by its tournament's start (StartPool)",
                    field="hold_key",
                )
            match_id = rows[0].match_id
            (_capture if how == "capture" else release_holds)(b, op, match_id, rows)
            event = events_pb2.WalletEvent(match_id=match_id)
            return b.finish(op, Outcome(0, op.kind), event, hold_account(match_id))

        reads = Reads((HOUSE,), hold_key=hold_key)
        return await self.submit(key, how, {"h": hold_key}, rules, reads)

    async def settle(
        self,
        key: str,
        match_id: str,
        winner_id: str,
        cube: int = 1,
        applied_boosts: Sequence[str] = (),
    ) -> Outcome:
        """Pay the winner. Open holds are resolved first: raises up to the final `cube` are
        captured, boosts in `applied_boosts` too, the rest released (the two hints are facts of
        the ended match, not part of the request's identity)."""
        check_id("match_id", match_id)
        check_id("winner_id", winner_id)
        pot = escrow_account(match_id)

        def rules(b: Books, op: Draft) -> Outcome:
            b.open_escrow(match_id)
            _resolve_holds(b, op, match_id, cube, applied_boosts)
            row = b.open_escrow(match_id)
            if winner_id not in (row.player_a, row.player_b):
                raise InvalidArgument(
                    "NOT_SEATED",
                    f"{winner_id} is not a player of match {match_id}",
                    field="winner_id",
                )
            b.ensure(HOUSE, "house")
            winner = player_account(winner_id)
            fees = fee(row.stake_a, self.fee_bps) + fee(row.stake_b, self.fee_bps)
            payout = row.stake_a + row.stake_b - fees
            own = row.stake_a if winner_id == row.player_a else row.stake_b
            if payout:
                b.move(op, pot, winner, payout)
            if fees:
                b.move(op, pot, HOUSE, fees)
            b.change_escrow(row, status=EscrowStatus.SETTLED, closed_by=op)
            outcome = Outcome(0, op.kind, payout=payout, fees=fees, net_gain=payout - own)
            event = events_pb2.WalletEvent(
                match_id=match_id, winner_id=winner_id, net_gain=payout - own, fees=fees
            )
            return b.finish(op, outcome, event, pot)

        params = {"m": match_id, "w": winner_id}
        return await self.submit(
            key, "settle", params, rules, Reads((HOUSE,), (match_id,)), match_id
        )

    async def refund(self, key: str, match_id: str, applied_boosts: Sequence[str] = ()) -> Outcome:
        """Return every stake (I-10), raises included: open raise holds are released; boosts
        applied are captured (never returned), other boost holds released."""
        check_id("match_id", match_id)
        pot = escrow_account(match_id)

        def rules(b: Books, op: Draft) -> Outcome:
            b.open_escrow(match_id)
            _resolve_holds(b, op, match_id, 0, applied_boosts)
            row = b.open_escrow(match_id)
            b.move(op, pot, player_account(row.player_a), row.stake_a)
            b.move(op, pot, player_account(row.player_b), row.stake_b)
            b.change_escrow(row, status=EscrowStatus.REFUNDED, closed_by=op)
            event = events_pb2.WalletEvent(match_id=match_id)
            return b.finish(op, Outcome(0, op.kind), event, pot)

        reads = Reads((HOUSE,), (match_id,))
        return await self.submit(key, "refund", {"m": match_id}, rules, reads, match_id)


def _replay(call: _Call, row: Stored) -> Outcome | ServiceError:
    if row.request_hash != call.request_hash:
        return Conflict(
            "IDEMPOTENCY_CONFLICT",
            "this idempotency key was used with different parameters",
            field="idempotency_key",
        )
    return Outcome.from_json(row.response, row.id)


def _fail(batch: list[_Call], err: BaseException) -> None:
    for call in batch:
        if not call.future.done():
            call.future.set_exception(err)


async def check_invariants(engine: AsyncEngine) -> list[str]:
    """Every broken ledger invariant, as text ([] when the books balance). The database does the
    scanning and sends back only sums and offending rows: every wallet replica audits every few
    seconds, and reading the whole ledger into Python each time cost a quarter of a wallet's CPU
    at a few thousand live matches."""
    problems: list[str] = []
    not_external = accounts.c.kind != "external"
    async with engine.connect() as conn:
        inside, external = (
            await conn.execute(
                select(
                    func.coalesce(func.sum(case((not_external, accounts.c.balance), else_=0)), 0),
                    func.coalesce(func.sum(case((not_external, 0), else_=accounts.c.balance)), 0),
                )
            )
        ).one()
        if int(inside) != -int(external):
            problems.append(f"accounts hold {inside} but {-external} was deposited")
        negative = select(accounts.c.id, accounts.c.balance).where(
            and_(not_external, accounts.c.balance < 0)
        )
        problems += [f"{r.id} below zero: {r.balance}" for r in await conn.execute(negative)]
        # An open escrow's account holds both stakes; a closed one's holds nothing.
        account = accounts.alias("escrow_account")
        held = func.coalesce(account.c.balance, 0)
        expected = case(
            (escrows.c.status == EscrowStatus.OPEN, escrows.c.stake_a + escrows.c.stake_b), else_=0
        )
        mismatched = (
            select(escrows.c.match_id, escrows.c.status, held.label("held"), expected.label("want"))
            .select_from(
                escrows.outerjoin(account, account.c.id == ESCROW_PREFIX + escrows.c.match_id)
            )
            .where(held != expected)
        )
        problems += [
            f"escrow {e.match_id} ({e.status}) holds {e.held}, expected {e.want}"
            for e in await conn.execute(mismatched)
        ]
        # A hold account holds the sum of its match's open holds.
        open_holds = (
            select(
                (HOLD_PREFIX + holds.c.match_id).label("account"),
                func.sum(holds.c.amount).label("sum"),
            )
            .where(holds.c.status == HoldStatus.HELD)
            .group_by(holds.c.match_id)
            .subquery()
        )
        want = func.coalesce(open_holds.c.sum, 0)
        hold_rows = (
            select(accounts.c.id, accounts.c.balance, want.label("want"))
            .select_from(accounts.outerjoin(open_holds, open_holds.c.account == accounts.c.id))
            .where(and_(accounts.c.kind == "hold", accounts.c.balance != want))
        )
        problems += [
            f"{r.id} holds {r.balance}, its open holds {r.want}"
            for r in await conn.execute(hold_rows)
        ]
        # A running pool holds its entrants' buy-ins; an open, paid or refunded one nothing.
        pool_account = accounts.alias("pool_account")
        in_pool = func.coalesce(pool_account.c.balance, 0)
        want_pool = case(
            (pools.c.status == PoolStatus.RUNNING, pools.c.buy_in * pools.c.entrants), else_=0
        )
        problems += [
            f"pool {r.tournament_id} ({r.status}) holds {r.held}, expected {r.want}"
            for r in await conn.execute(
                select(
                    pools.c.tournament_id,
                    pools.c.status,
                    in_pool.label("held"),
                    want_pool.label("want"),
                )
                .select_from(
                    pools.outerjoin(
                        pool_account, pool_account.c.id == POOL_PREFIX + pools.c.tournament_id
                    )
                )
                .where(in_pool != want_pool)
            )
        ]
        closings = (
            await conn.execute(
                select(operations.c.match_id, func.count())
                .where(operations.c.kind.in_(("settle", "refund")))
                .group_by(operations.c.match_id)
                .having(func.count() > 1)
            )
        ).all()
        problems += [f"match {m} closed {n} times" for m, n in closings]
        # What came in from outside less what went back out (an operator's debits).
        deposits = await conn.scalar(
            select(
                func.coalesce(
                    func.sum(
                        case(
                            (transfers.c.debit == EXTERNAL, transfers.c.amount),
                            (transfers.c.credit == EXTERNAL, -transfers.c.amount),
                            else_=0,
                        )
                    ),
                    0,
                )
            )
        )
        if int(deposits or 0) != -int(external):
            problems.append(f"external balance {external} disagrees with deposits {deposits}")
    return problems
