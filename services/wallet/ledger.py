"""The ledger: every money movement is one SQL transaction of double-entry transfers.

Each mutating operation runs in a single transaction that (1) answers a replayed idempotency key
with the stored answer, (2) locks the accounts it touches in id order (PostgreSQL: FOR UPDATE;
SQLite: one writer at a time), (3) refuses, before writing anything, what the rules forbid,
(4) writes transfers, escrow changes and the outbox event, and (5) stores its answer under the
key. An error anywhere rolls everything back: no diamond is created, lost or paid twice.

Holds: a double's raise is held at the offer (both players' current stakes) and captured into
the escrow at the take, so a take needs no wallet call and a wallet outage can never turn it into
a drop; a boost's price is held before the boost is committed and captured (to the house) only
once it was applied. A hold not captured is released; settlement and refund resolve every hold
still open, so none outlives its match.

Invariants (`check_invariants`): the balances of all accounts but `external` add up to minus
`external`'s balance (the total ever deposited); no player, escrow or hold below zero; every
escrow closed at most once, and holding exactly its stakes while open; every hold account holding
exactly its open holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, case, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bg.events.v1 import events_pb2
from services.common.clock import now_ms
from services.common.errors import Conflict, InvalidArgument, NotFound, ServiceError
from services.common.topics import WALLET_EVENTS
from services.wallet.schema import accounts, escrows, holds, operations, outbox, transfers

HOUSE = "house"
EXTERNAL = "external"
CLOSED = "closed-accounts"  # the diamonds of deleted accounts: kept, no longer anybody's
MAX_ID = 120


def player_account(player_id: str) -> str:
    return f"player:{player_id}"


ESCROW_PREFIX = "escrow:"  # a match's pot: ESCROW_PREFIX + match id
HOLD_PREFIX = "hold:"  # a match's raise and boost holds: HOLD_PREFIX + match id


def escrow_account(match_id: str) -> str:
    return ESCROW_PREFIX + match_id


def hold_account(match_id: str) -> str:
    return HOLD_PREFIX + match_id


def fee(stake: int, fee_bps: int) -> int:
    """House fee on one side's final stake (I-11: 8% = 800 bps; stakes are multiples of 100,
    so the fee is whole; any remainder is rounded down, in the player's favour)."""
    return stake * fee_bps // 10_000


class InsufficientFunds(ServiceError):
    def __init__(self, players: Sequence[str]) -> None:
        super().__init__(
            "INSUFFICIENT_FUNDS",
            "cannot cover: " + ", ".join(players),
            players=",".join(players),
        )
        self.players = list(players)


def _now_ms() -> int:
    return now_ms()


def _check_id(name: str, value: str) -> str:
    if not value or len(value) > MAX_ID or any(c.isspace() for c in value) or ":" in value:
        raise InvalidArgument(
            "INVALID_ID", f"{name} must be 1..{MAX_ID} characters, no spaces or ':'", field=name
        )
    return value


def _check_amount(name: str, value: int) -> int:
    if value <= 0:
        raise InvalidArgument("INVALID_AMOUNT", f"{name} must be positive, got {value}", field=name)
    return value


@dataclass
class Outcome:
    """The answer of one operation (stored under its idempotency key)."""

    operation_id: int
    kind: str
    changes: dict[str, list[int]] = field(default_factory=dict)  # account -> [delta, balance]
    payout: int = 0
    fees: int = 0
    net_gain: int = 0
    stake: int = 0
    replayed: bool = False

    def to_json(self) -> str:
        doc = {k: v for k, v in self.__dict__.items() if k != "replayed"}
        return json.dumps(doc, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        return cls(**json.loads(text), replayed=True)


@dataclass
class _Op:
    """One operation in progress inside its transaction."""

    conn: AsyncConnection
    id: int
    kind: str
    now: int
    deltas: dict[str, int] = field(default_factory=dict)


class Ledger:
    def __init__(self, engine: AsyncEngine, fee_bps: int = 800) -> None:
        self.engine = engine
        self.fee_bps = fee_bps
        self._sqlite = engine.dialect.name == "sqlite"
        self._writer = asyncio.Lock()  # SQLite has one writer; queue them here, not in the file
        self.on_operation: Callable[[Outcome], None] = lambda outcome: None

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
        acct = player_account(_check_id("player_id", player_id))
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

    async def open_escrow_total(self) -> int:
        async with self.engine.connect() as conn:
            total = await conn.scalar(
                select(func.coalesce(func.sum(escrows.c.stake_a + escrows.c.stake_b), 0)).where(
                    escrows.c.status == "open"
                )
            )
        return int(total or 0)

    # -- the transaction frame ---------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        if self._sqlite:
            async with self._writer, self.engine.begin() as conn:
                yield conn
        else:
            async with self.engine.begin() as conn:
                yield conn

    async def _run(
        self,
        key: str,
        kind: str,
        params: dict[str, Any],
        body: Callable[[_Op], Awaitable[Outcome]],
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
        for attempt in range(2):
            try:
                async with self._write() as conn:
                    row = (
                        await conn.execute(
                            select(operations.c.request_hash, operations.c.response).where(
                                operations.c.idem_key == key
                            )
                        )
                    ).first()
                    if row is not None:
                        return self._replay(key, request_hash, row)
                    now = _now_ms()
                    op_id = (
                        await conn.execute(
                            operations.insert()
                            .values(
                                idem_key=key,
                                kind=kind,
                                request_hash=request_hash,
                                response="",
                                match_id=match_id,
                                created_ms=now,
                                memo=memo,
                            )
                            .returning(operations.c.id)
                        )
                    ).scalar_one()
                    op = _Op(conn, op_id, kind, now)
                    outcome = await body(op)
                    await conn.execute(
                        update(operations)
                        .where(operations.c.id == op_id)
                        .values(response=outcome.to_json())
                    )
            except IntegrityError:
                # A concurrent call won a unique key (the same idempotency key, or an escrow of
                # the same match): run once more, now seeing what it wrote.
                if attempt == 0:
                    continue
                raise
            self.on_operation(outcome)
            return outcome
        raise AssertionError("unreachable")

    def _replay(self, key: str, request_hash: str, row: Any) -> Outcome:
        if row.request_hash != request_hash:
            raise Conflict(
                "IDEMPOTENCY_CONFLICT",
                "this idempotency key was used with different parameters",
                field="idempotency_key",
            )
        return Outcome.from_json(row.response)

    async def _key_exists(self, key: str) -> bool:
        async with self.engine.connect() as conn:
            return (
                await conn.scalar(select(operations.c.id).where(operations.c.idem_key == key))
            ) is not None

    # -- building blocks inside a transaction ------------------------------------------------

    async def _ensure(self, conn: AsyncConnection, account: str, kind: str, now: int) -> None:
        insert = postgresql.insert if not self._sqlite else sqlite.insert
        await conn.execute(
            insert(accounts)
            .values(id=account, kind=kind, balance=0, created_ms=now)
            .on_conflict_do_nothing()
        )

    async def _lock(self, conn: AsyncConnection, ids: Sequence[str]) -> dict[str, int]:
        """Balances of `ids`, locked until commit, taken in id order (no deadlocks)."""
        query = select(accounts.c.id, accounts.c.balance).where(accounts.c.id.in_(sorted(set(ids))))
        query = query.order_by(accounts.c.id).with_for_update()
        return {r.id: int(r.balance) for r in await conn.execute(query)}

    async def _move(self, op: _Op, debit: str, credit: str, amount: int) -> None:
        result = await op.conn.execute(
            update(accounts)
            .where(
                and_(
                    accounts.c.id == debit,
                    or_(accounts.c.kind == "external", accounts.c.balance >= amount),
                )
            )
            .values(balance=accounts.c.balance - amount)
        )
        if result.rowcount != 1:  # the lock makes this unreachable unless a rule check is missing
            raise InsufficientFunds([debit])
        await op.conn.execute(
            update(accounts)
            .where(accounts.c.id == credit)
            .values(balance=accounts.c.balance + amount)
        )
        await op.conn.execute(
            transfers.insert().values(
                operation_id=op.id, debit=debit, credit=credit, amount=amount, created_ms=op.now
            )
        )
        op.deltas[debit] = op.deltas.get(debit, 0) - amount
        op.deltas[credit] = op.deltas.get(credit, 0) + amount

    async def _finish(
        self, op: _Op, outcome: Outcome, event: events_pb2.WalletEvent, key: str
    ) -> Outcome:
        balances = await op.conn.execute(
            select(accounts.c.id, accounts.c.balance).where(accounts.c.id.in_(list(op.deltas)))
        )
        outcome.changes = {r.id: [op.deltas[r.id], int(r.balance)] for r in balances}
        event.event_id = f"wallet:{op.id}"
        event.operation_id = op.id
        event.kind = op.kind
        event.at_ms = op.now
        for account, delta in op.deltas.items():
            if account.startswith("player:"):
                event.player_deltas[account.removeprefix("player:")] = delta
        await op.conn.execute(
            outbox.insert().values(
                topic=WALLET_EVENTS, key=key, payload=event.SerializeToString(), created_ms=op.now
            )
        )
        return outcome

    async def _open_escrow(self, conn: AsyncConnection, match_id: str) -> Any:
        query = select(escrows).where(escrows.c.match_id == match_id).with_for_update()
        row = (await conn.execute(query)).first()
        if row is None:
            raise NotFound("UNKNOWN_MATCH", f"no escrow for match {match_id}", field="match_id")
        if row.status != "open":
            raise ServiceError(
                "ESCROW_CLOSED",
                f"the escrow of match {match_id} is already {row.status}",
                status=row.status,
            )
        return row

    # -- operations --------------------------------------------------------------------------

    async def deposit(self, key: str, player_id: str, amount: int, reason: str = "") -> Outcome:
        _check_id("player_id", player_id)
        _check_amount("amount", amount)
        acct = player_account(player_id)

        async def body(op: _Op) -> Outcome:
            await self._ensure(op.conn, EXTERNAL, "external", op.now)
            await self._ensure(op.conn, acct, "player", op.now)
            await self._lock(op.conn, [EXTERNAL, acct])
            await self._move(op, EXTERNAL, acct, amount)
            return await self._finish(op, Outcome(op.id, op.kind), events_pb2.WalletEvent(), acct)

        return await self._run(key, "deposit", {"p": player_id, "a": amount, "r": reason}, body)

    async def adjust(
        self, key: str, player_id: str, amount: int, operator: str, reason: str
    ) -> Outcome:
        """An operator's credit (amount > 0, from outside) or debit (amount < 0, to outside);
        the operation keeps "<operator>: <reason>". A debit beyond the balance changes nothing
        (INSUFFICIENT_FUNDS)."""
        _check_id("player_id", player_id)
        _check_amount("amount", abs(amount))
        if not operator or not 1 <= len(reason.strip()) <= 200:
            raise InvalidArgument(
                "REASON_REQUIRED", "an adjustment names its operator and a reason (1..200)",
                field="reason",
            )  # fmt: skip
        acct = player_account(player_id)

        async def body(op: _Op) -> Outcome:
            await self._ensure(op.conn, EXTERNAL, "external", op.now)
            await self._ensure(op.conn, acct, "player", op.now)
            await self._lock(op.conn, [EXTERNAL, acct])
            if amount > 0:
                await self._move(op, EXTERNAL, acct, amount)
            else:
                await self._take_from(op, player_id, EXTERNAL, -amount)
            return await self._finish(op, Outcome(op.id, op.kind), events_pb2.WalletEvent(), acct)

        kind = "credit" if amount > 0 else "debit"
        memo = f"{operator}: {reason.strip()}"
        params = {"p": player_id, "a": amount, "o": operator, "r": reason}
        return await self._run(key, kind, params, body, memo=memo)

    async def open_escrows(self, older_than_ms: int, limit: int = 50) -> list[Any]:
        """Escrows still open that were opened at least `older_than_ms` ago, oldest first."""
        limit = 50 if limit == 0 else limit
        if not 1 <= limit <= 200 or older_than_ms < 0:
            raise InvalidArgument("INVALID_LIMIT", "limit 1..200, age >= 0", field="limit")
        query = (
            select(escrows)
            .where(escrows.c.status == "open", escrows.c.created_ms <= _now_ms() - older_than_ms)
            .order_by(escrows.c.created_ms)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            return list((await conn.execute(query)).all())

    async def close_account(self, key: str, player_id: str) -> Outcome:
        """A deleted account's diamonds go to CLOSED: the books stay whole and its history
        stays. Refused while the player has stakes in a match in play (IN_PLAY)."""
        _check_id("player_id", player_id)
        acct = player_account(player_id)

        async def body(op: _Op) -> Outcome:
            in_play = await op.conn.scalar(
                select(func.count())
                .select_from(escrows)
                .where(
                    escrows.c.status == "open",
                    or_(escrows.c.player_a == player_id, escrows.c.player_b == player_id),
                )
            )
            if in_play:
                raise ServiceError(
                    "IN_PLAY", "a match with stakes is in play: finish it first", field="player_id"
                )
            await self._ensure(op.conn, CLOSED, "closed", op.now)
            await self._ensure(op.conn, acct, "player", op.now)
            balance = (await self._lock(op.conn, [acct, CLOSED]))[acct]
            if balance > 0:
                await self._move(op, acct, CLOSED, balance)
            return await self._finish(op, Outcome(op.id, op.kind), events_pb2.WalletEvent(), acct)

        return await self._run(key, "close", {"p": player_id}, body)

    async def escrow(self, key: str, match_id: str, players: Sequence[str], stake: int) -> Outcome:
        _check_id("match_id", match_id)
        if len(players) != 2 or players[0] == players[1]:
            raise InvalidArgument(
                "INVALID_PLAYERS", "an escrow takes two different players", field="player_ids"
            )
        for p in players:
            _check_id("player_ids", p)
        _check_amount("stake", stake)
        pa, pb = (player_account(p) for p in players)
        pot = escrow_account(match_id)

        async def body(op: _Op) -> Outcome:
            existing = await op.conn.scalar(
                select(escrows.c.status).where(escrows.c.match_id == match_id)
            )
            if existing is not None:
                raise Conflict(
                    "ESCROW_EXISTS", f"match {match_id} already has an escrow", field="match_id"
                )
            balances = await self._lock(op.conn, [pa, pb])
            short = [
                p
                for p, acct in zip(players, (pa, pb), strict=True)
                if balances.get(acct, 0) < stake
            ]
            if short:
                raise InsufficientFunds(short)
            await self._ensure(op.conn, pot, "escrow", op.now)
            await op.conn.execute(
                escrows.insert().values(
                    match_id=match_id, player_a=players[0], player_b=players[1], stake_a=stake,
                    stake_b=stake, bet=stake, status="open", created_ms=op.now,
                )
            )  # fmt: skip
            await self._move(op, pa, pot, stake)
            await self._move(op, pb, pot, stake)
            outcome = Outcome(op.id, op.kind, stake=stake)
            return await self._finish(
                op, outcome, events_pb2.WalletEvent(match_id=match_id, stake=stake), pot
            )

        return await self._run(
            key, "escrow", {"m": match_id, "p": list(players), "s": stake}, body, match_id
        )

    async def raise_escrow(self, key: str, match_id: str) -> Outcome:
        _check_id("match_id", match_id)
        pot = escrow_account(match_id)

        async def body(op: _Op) -> Outcome:
            row = await self._open_escrow(op.conn, match_id)
            pa, pb = player_account(row.player_a), player_account(row.player_b)
            balances = await self._lock(op.conn, [pa, pb, pot])
            short = [
                p
                for p, acct, need in (
                    (row.player_a, pa, row.stake_a),
                    (row.player_b, pb, row.stake_b),
                )
                if balances.get(acct, 0) < need
            ]
            if short:
                raise InsufficientFunds(short)
            await self._move(op, pa, pot, row.stake_a)
            await self._move(op, pb, pot, row.stake_b)
            await op.conn.execute(
                update(escrows)
                .where(escrows.c.match_id == match_id)
                .values(stake_a=row.stake_a * 2, stake_b=row.stake_b * 2)
            )
            stake = row.stake_a * 2
            outcome = Outcome(op.id, op.kind, stake=stake)
            return await self._finish(
                op, outcome, events_pb2.WalletEvent(match_id=match_id, stake=stake), pot
            )

        return await self._run(key, "raise", {"m": match_id}, body, match_id)

    async def spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str = ""
    ) -> Outcome:
        _check_id("player_id", player_id)
        _check_amount("amount", amount)
        acct = player_account(player_id)

        async def body(op: _Op) -> Outcome:
            await self._ensure(op.conn, HOUSE, "house", op.now)
            await self._take_from(op, player_id, HOUSE, amount)
            event = events_pb2.WalletEvent(match_id=match_id)
            return await self._finish(op, Outcome(op.id, op.kind), event, acct)

        params = {"p": player_id, "a": amount, "r": reason, "m": match_id}
        return await self._run(key, "spend", params, body, match_id or None)

    async def hold_raise(self, key: str, match_id: str, cube: int) -> Outcome:
        """A double to `cube` is offered: hold what each stake grows by (I-4: both must cover
        it), captured into the escrow if the double is taken, released if not. The raise is
        bet x cube/2 from the bet, not the stakes: a take's capture may still be on its way (the
        table captures after its commit, best effort) when the next double is offered."""
        _check_id("match_id", match_id)
        if cube < 2 or cube & (cube - 1):
            raise InvalidArgument(
                "INVALID_CUBE", "a raise doubles the cube to a power of two from 2", field="cube"
            )
        hold = hold_account(match_id)

        async def body(op: _Op) -> Outcome:
            row = await self._open_escrow(op.conn, match_id)
            pa, pb = player_account(row.player_a), player_account(row.player_b)
            await self._ensure(op.conn, hold, "hold", op.now)
            balances = await self._lock(op.conn, [pa, pb, hold])
            amount = (row.bet or row.stake_a) * (cube // 2)
            sides = ((row.player_a, pa), (row.player_b, pb))
            short = [p for p, acct in sides if balances.get(acct, 0) < amount]
            if short:
                raise InsufficientFunds(short)
            for player, acct in sides:
                await self._move(op, acct, hold, amount)
                await self._add_hold(op, key, match_id, player, amount, "raise", cube)
            outcome = Outcome(op.id, op.kind, stake=amount)
            event = events_pb2.WalletEvent(match_id=match_id, stake=amount)
            return await self._finish(op, outcome, event, hold)

        return await self._run(key, "hold_raise", {"m": match_id, "c": cube}, body, match_id)

    async def hold_spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> Outcome:
        """A boost is asked for: hold its price until it is applied (captured, to the house) or
        not (released): a boost is charged only if it happened."""
        _check_id("player_id", player_id)
        _check_id("match_id", match_id)
        _check_amount("amount", amount)
        acct, hold = player_account(player_id), hold_account(match_id)

        async def body(op: _Op) -> Outcome:
            await self._ensure(op.conn, hold, "hold", op.now)
            await self._take_from(op, player_id, hold, amount)
            await self._add_hold(op, key, match_id, player_id, amount, "boost", 0)
            event = events_pb2.WalletEvent(match_id=match_id)
            return await self._finish(op, Outcome(op.id, op.kind), event, acct)

        params = {"p": player_id, "a": amount, "r": reason, "m": match_id}
        return await self._run(key, "hold_spend", params, body, match_id)

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

        async def body(op: _Op) -> Outcome:
            query = select(holds).where(holds.c.hold_key == hold_key).with_for_update()
            rows = (await op.conn.execute(query)).all()
            if not rows:
                raise NotFound("UNKNOWN_HOLD", f"no hold {hold_key}", field="hold_key")
            closed = {r.status for r in rows if r.status != "held"}
            if closed:
                raise Conflict("HOLD_CLOSED", f"hold {hold_key} is already {closed.pop()}")
            match_id = rows[0].match_id
            if how == "capture":
                await self._capture(op, match_id, rows)
            else:
                await self._release(op, match_id, rows)
            event = events_pb2.WalletEvent(match_id=match_id)
            return await self._finish(op, Outcome(op.id, op.kind), event, hold_account(match_id))

        return await self._run(key, how, {"h": hold_key}, body, None)

    async def _take_from(self, op: _Op, player_id: str, to: str, amount: int) -> None:
        """Move `amount` from a player to `to`, refusing an unknown player or a short one."""
        acct = player_account(player_id)
        balances = await self._lock(op.conn, [acct, to])
        if acct not in balances:
            raise NotFound(
                "UNKNOWN_PLAYER", f"no account for player {player_id}", field="player_id"
            )
        if balances[acct] < amount:
            raise InsufficientFunds([player_id])
        await self._move(op, acct, to, amount)

    async def _add_hold(
        self, op: _Op, key: str, match_id: str, player_id: str, amount: int, purpose: str, cube: int
    ) -> None:
        await op.conn.execute(
            holds.insert().values(
                hold_key=key, match_id=match_id, player_id=player_id, amount=amount,
                purpose=purpose, cube=cube, status="held", created_ms=op.now,
            )
        )  # fmt: skip

    async def _capture(self, op: _Op, match_id: str, rows: Sequence[Any]) -> None:
        hold = hold_account(match_id)
        pot = escrow_account(match_id)
        raises = [r for r in rows if r.purpose == "raise"]
        if raises:
            row = await self._open_escrow(op.conn, match_id)
            await self._lock(op.conn, [hold, pot])
            extra = {row.player_a: 0, row.player_b: 0}
            for r in raises:
                await self._move(op, hold, pot, int(r.amount))
                extra[r.player_id] += int(r.amount)
            await op.conn.execute(
                update(escrows)
                .where(escrows.c.match_id == match_id)
                .values(
                    stake_a=row.stake_a + extra[row.player_a],
                    stake_b=row.stake_b + extra[row.player_b],
                )
            )
        boosts = [r for r in rows if r.purpose == "boost"]
        if boosts:
            await self._ensure(op.conn, HOUSE, "house", op.now)
            await self._lock(op.conn, [hold, HOUSE])
            for r in boosts:
                await self._move(op, hold, HOUSE, int(r.amount))
        await self._mark(op, rows, "captured")

    async def _release(self, op: _Op, match_id: str, rows: Sequence[Any]) -> None:
        hold = hold_account(match_id)
        await self._lock(op.conn, [hold, *(player_account(r.player_id) for r in rows)])
        for r in rows:
            await self._move(op, hold, player_account(r.player_id), int(r.amount))
        await self._mark(op, rows, "released")

    async def _mark(self, op: _Op, rows: Sequence[Any], status: str) -> None:
        await op.conn.execute(
            update(holds)
            .where(holds.c.id.in_([r.id for r in rows]))
            .values(status=status, closed_operation_id=op.id)
        )

    async def _resolve_holds(
        self, op: _Op, match_id: str, cube: int, applied_boosts: Sequence[str]
    ) -> None:
        """Before an escrow closes: capture the raises of doubles taken (their cube is within
        the match's final `cube`) and the boosts applied; release every other open hold."""
        query = (
            select(holds)
            .where(and_(holds.c.match_id == match_id, holds.c.status == "held"))
            .order_by(holds.c.id)
            .with_for_update()
        )
        rows = (await op.conn.execute(query)).all()
        applied = set(applied_boosts)
        taken = [
            r
            for r in rows
            if (r.purpose == "raise" and 0 < r.cube <= cube)
            or (r.purpose == "boost" and r.hold_key in applied)
        ]
        rest = [r for r in rows if r not in taken]
        if taken:
            await self._capture(op, match_id, taken)
        if rest:
            await self._release(op, match_id, rest)

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
        _check_id("match_id", match_id)
        _check_id("winner_id", winner_id)
        pot = escrow_account(match_id)

        async def body(op: _Op) -> Outcome:
            await self._open_escrow(op.conn, match_id)
            await self._resolve_holds(op, match_id, cube, applied_boosts)
            row = await self._open_escrow(op.conn, match_id)
            if winner_id not in (row.player_a, row.player_b):
                raise InvalidArgument(
                    "NOT_SEATED",
                    f"{winner_id} is not a player of match {match_id}",
                    field="winner_id",
                )
            await self._ensure(op.conn, HOUSE, "house", op.now)
            winner = player_account(winner_id)
            await self._lock(op.conn, [pot, winner, HOUSE])
            fees = fee(row.stake_a, self.fee_bps) + fee(row.stake_b, self.fee_bps)
            payout = row.stake_a + row.stake_b - fees
            own = row.stake_a if winner_id == row.player_a else row.stake_b
            if payout:
                await self._move(op, pot, winner, payout)
            if fees:
                await self._move(op, pot, HOUSE, fees)
            await self._close(op, match_id, "settled")
            outcome = Outcome(op.id, op.kind, payout=payout, fees=fees, net_gain=payout - own)
            event = events_pb2.WalletEvent(
                match_id=match_id, winner_id=winner_id, net_gain=payout - own, fees=fees
            )
            return await self._finish(op, outcome, event, pot)

        return await self._run(key, "settle", {"m": match_id, "w": winner_id}, body, match_id)

    async def refund(self, key: str, match_id: str, applied_boosts: Sequence[str] = ()) -> Outcome:
        """Return every stake (I-10), raises included: open raise holds are released; boosts
        applied are captured (never returned), other boost holds released."""
        _check_id("match_id", match_id)
        pot = escrow_account(match_id)

        async def body(op: _Op) -> Outcome:
            await self._open_escrow(op.conn, match_id)
            await self._resolve_holds(op, match_id, 0, applied_boosts)
            row = await self._open_escrow(op.conn, match_id)
            pa, pb = player_account(row.player_a), player_account(row.player_b)
            await self._lock(op.conn, [pot, pa, pb])
            await self._move(op, pot, pa, row.stake_a)
            await self._move(op, pot, pb, row.stake_b)
            await self._close(op, match_id, "refunded")
            return await self._finish(
                op, Outcome(op.id, op.kind), events_pb2.WalletEvent(match_id=match_id), pot
            )

        return await self._run(key, "refund", {"m": match_id}, body, match_id)

    async def _close(self, op: _Op, match_id: str, status: str) -> None:
        result = await op.conn.execute(
            update(escrows)
            .where(and_(escrows.c.match_id == match_id, escrows.c.status == "open"))
            .values(status=status, closed_operation_id=op.id)
        )
        if result.rowcount != 1:
            raise ServiceError("ESCROW_CLOSED", f"the escrow of match {match_id} is already closed")


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
            (escrows.c.status == "open", escrows.c.stake_a + escrows.c.stake_b), else_=0
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
            .where(holds.c.status == "held")
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
