"""A batch's reads and writes: what its operations can touch, locked, and what they changed.

Reads lock in one order for every replica (escrows, then pools, then their holds, then
accounts, each by id) so two replicas' batches never deadlock; writes are one statement per table
(executemany), however many operations the batch holds.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, and_, bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from services.contracts.topics import WALLET_EVENTS
from services.wallet.batch_books import (
    Account,
    Books,
    Draft,
    Escrow,
    EscrowStatus,
    Hold,
    HoldPurpose,
    HoldStatus,
    Pool,
    PoolStatus,
    op_id,
)
from services.wallet.schema import accounts, escrows, holds, operations, outbox, pools, transfers


@dataclass(frozen=True)
class Reads:
    """What one operation may touch: accounts by id, matches (their escrow, their open holds,
    the escrow's players and the match's pot and hold accounts), holds placed under a key, a
    player's open escrows (a closing account), and tournaments' prize pools (the pool, every
    buy-in hold of the tournament, whatever its status, their players and the pool's and hold's
    accounts)."""

    accounts: tuple[str, ...] = ()
    matches: tuple[str, ...] = ()
    hold_key: str = ""
    in_play_of: str = ""
    pools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stored:
    id: int
    request_hash: str
    response: str


class _Statements:
    """Every statement a batch runs, built once: building SQLAlchemy constructs per call cost a
    quarter of the wallet's CPU (measured with py-spy); lists are expanding parameters."""

    def __init__(self) -> None:
        def many(name: str) -> Any:
            return bindparam(name, expanding=True)

        self.operations = select(
            operations.c.idem_key,
            operations.c.id,
            operations.c.request_hash,
            operations.c.response,
        ).where(operations.c.idem_key.in_(many("keys")))
        self.hold_matches = (
            select(holds.c.match_id).where(holds.c.hold_key.in_(many("keys"))).distinct()
        )
        self.escrows = (
            select(escrows)
            .where(escrows.c.match_id.in_(many("matches")))
            .order_by(escrows.c.match_id)
            .with_for_update()
        )
        players = many("players")
        self.escrows_and_in_play = (
            select(escrows)
            .where(
                or_(
                    escrows.c.match_id.in_(many("matches")),
                    and_(
                        escrows.c.status == EscrowStatus.OPEN,
                        or_(escrows.c.player_a.in_(players), escrows.c.player_b.in_(players)),
                    ),
                )
            )
            .order_by(escrows.c.match_id)
            .with_for_update()
        )
        self.holds = (
            select(holds)
            .where(
                or_(
                    holds.c.hold_key.in_(many("keys")),
                    and_(holds.c.match_id.in_(many("matches")), holds.c.status == HoldStatus.HELD),
                )
            )
            .order_by(holds.c.id)
            .with_for_update()
        )
        self.pools = (
            select(pools)
            .where(pools.c.tournament_id.in_(many("pools")))
            .order_by(pools.c.tournament_id)
            .with_for_update()
        )
        self.pool_holds = (
            select(holds)
            .where(holds.c.match_id.in_(many("pools")))
            .order_by(holds.c.id)
            .with_for_update()
        )
        # A closing player's tournaments still to settle: a buy-in held (registered) or
        # captured into a running pool (in the bracket, a prize still possible).
        self.entered = (
            select(holds.c.player_id, holds.c.match_id)
            .join(pools, pools.c.tournament_id == holds.c.match_id)
            .where(
                holds.c.player_id.in_(many("players")),
                holds.c.purpose == HoldPurpose.BUYIN,
                or_(
                    holds.c.status == HoldStatus.HELD,
                    and_(
                        holds.c.status == HoldStatus.CAPTURED, pools.c.status == PoolStatus.RUNNING
                    ),
                ),
            )
            .distinct()
        )
        self.add_pools = pools.insert()
        self.change_pools = (
            update(pools)
            .where(pools.c.tournament_id == bindparam("t"))
            .values(
                buy_in=bindparam("b"),
                status=bindparam("st"),
                entrants=bindparam("n"),
                closed_operation_id=bindparam("closed"),
            )
        )
        self.accounts = (
            select(accounts.c.id, accounts.c.kind, accounts.c.balance)
            .where(accounts.c.id.in_(many("ids")))
            .order_by(accounts.c.id)
            .with_for_update()
        )
        self.add_operations = operations.insert().returning(operations.c.id, operations.c.idem_key)
        self.add_accounts = accounts.insert()
        self.move_balances = (
            update(accounts)
            .where(accounts.c.id == bindparam("account"))
            .values(balance=accounts.c.balance + bindparam("delta", type_=BigInteger))
        )
        self.add_escrows = escrows.insert()
        self.change_escrows = (
            update(escrows)
            .where(escrows.c.match_id == bindparam("m"))
            .values(
                stake_a=bindparam("sa"),
                stake_b=bindparam("sb"),
                status=bindparam("st"),
                closed_operation_id=bindparam("closed"),
            )
        )
        self.add_holds = holds.insert()
        self.change_holds = (
            update(holds)
            .where(holds.c.id == bindparam("hid"))
            .values(status=bindparam("st"), closed_operation_id=bindparam("closed"))
        )
        self.add_transfers = transfers.insert()
        self.add_outbox = outbox.insert()


@functools.cache
def _sql() -> _Statements:
    return _Statements()


def _player(player_id: str) -> str:
    return f"player:{player_id}"


async def load_operations(conn: AsyncConnection, keys: Sequence[str]) -> dict[str, Stored]:
    rows = await conn.execute(_sql().operations, {"keys": list(keys)})
    return {r.idem_key: Stored(r.id, r.request_hash, r.response) for r in rows}


async def load_books(conn: AsyncConnection, reads: Iterable[Reads]) -> Books:
    sql = _sql()
    wanted = list(reads)
    matches = {m for r in wanted for m in r.matches}
    hold_keys = sorted({r.hold_key for r in wanted if r.hold_key})
    players = sorted({r.in_play_of for r in wanted if r.in_play_of})
    if hold_keys:  # a hold's match never changes: read it before taking any lock
        matches |= set((await conn.execute(sql.hold_matches, {"keys": hold_keys})).scalars())
    escrow_rows: list[Escrow] = []
    if matches or players:
        params: dict[str, Any] = {"matches": sorted(matches)}
        if players:
            params["players"] = players
        query = sql.escrows_and_in_play if players else sql.escrows
        escrow_rows = [
            Escrow(
                r.match_id,
                r.player_a,
                r.player_b,
                int(r.stake_a),
                int(r.stake_b),
                int(r.bet or 0),
                EscrowStatus(r.status),
                int(r.created_ms),
                r.closed_operation_id,
            )
            for r in await conn.execute(query, params)
        ]
    tournaments = sorted({t for r in wanted for t in r.pools})
    pool_rows: list[Pool] = []
    if tournaments:
        pool_rows = [
            Pool(
                r.tournament_id,
                int(r.buy_in),
                PoolStatus(r.status),
                int(r.entrants),
                int(r.created_ms),
                r.closed_operation_id,
            )
            for r in await conn.execute(sql.pools, {"pools": tournaments})
        ]
    # Holds after their escrow's (or pool's) lock: a hold placed by another replica meanwhile
    # is seen.
    hold_rows: list[Hold] = []
    if matches:
        hold_rows = [
            _hold(r)
            for r in await conn.execute(sql.holds, {"keys": hold_keys, "matches": sorted(matches)})
        ]
    if tournaments:
        seen = {h.id for h in hold_rows}
        hold_rows += [
            _hold(r)
            for r in await conn.execute(sql.pool_holds, {"pools": tournaments})
            if r.id not in seen
        ]
    ids = {a for r in wanted for a in r.accounts}
    ids |= {f"escrow:{m}" for m in matches} | {f"hold:{m}" for m in matches}
    ids |= {f"pool:{t}" for t in tournaments} | {f"hold:{t}" for t in tournaments}
    ids |= {_player(h.player_id) for h in hold_rows}
    ids |= {_player(p) for e in escrow_rows for p in (e.player_a, e.player_b)}
    rows = await conn.execute(sql.accounts, {"ids": sorted(ids)})
    found = [Account(r.id, r.kind, int(r.balance)) for r in rows]
    entered: dict[str, set[str]] = {}
    if players:  # after the players' accounts are locked: no new buy-in of theirs can slip in
        for r in await conn.execute(sql.entered, {"players": players}):
            entered.setdefault(r.player_id, set()).add(r.match_id)
    return Books(found, escrow_rows, hold_rows, pool_rows, entered)


def _hold(r: Any) -> Hold:
    return Hold(
        r.id,
        r.hold_key,
        r.match_id,
        r.player_id,
        int(r.amount),
        HoldPurpose(r.purpose),
        int(r.cube),
        HoldStatus(r.status),
        int(r.created_ms),
        r.closed_operation_id,
    )


async def save(conn: AsyncConnection, books: Books, drafts: Sequence[Draft]) -> None:
    """Write the batch: its operations first (their ids), then what they changed."""
    sql = _sql()
    rows = [
        {
            "idem_key": d.key,
            "kind": d.kind,
            "request_hash": d.request_hash,
            "response": d.outcome.to_json() if d.outcome else "",
            "match_id": d.match_id,
            "created_ms": d.now,
            "memo": d.memo,
        }
        for d in drafts
    ]
    ids = {r.idem_key: r.id for r in await conn.execute(sql.add_operations, rows)}
    for d in drafts:
        d.id = ids[d.key]
        if d.outcome is not None:
            d.outcome.operation_id = d.id
        if d.event is not None:
            d.event.event_id = f"wallet:{d.id}"
            d.event.operation_id = d.id
    now = drafts[0].now
    if created := books.new_accounts():
        await conn.execute(
            sql.add_accounts,
            [
                {"id": a.id, "kind": a.kind, "balance": a.balance, "created_ms": now}
                for a in created
            ],
        )
    if changed := books.changed_balances():
        await conn.execute(
            sql.move_balances, [{"account": a, "delta": d} for a, d in changed.items()]
        )
    await _save_escrows(conn, books)
    await _save_pools(conn, books)
    await _save_holds(conn, books)
    moved = [
        {
            "operation_id": d.id,
            "debit": debit,
            "credit": credit,
            "amount": amount,
            "created_ms": d.now,
        }
        for d in drafts
        for debit, credit, amount in d.transfers
    ]
    if moved:
        await conn.execute(sql.add_transfers, moved)
    events = [
        {
            "topic": WALLET_EVENTS,
            "key": d.outbox_key,
            "created_ms": d.now,
            "payload": d.event.SerializeToString(),
        }
        for d in drafts
        if d.event is not None
    ]
    await conn.execute(sql.add_outbox, events)


async def _save_escrows(conn: AsyncConnection, books: Books) -> None:
    if created := books.new_escrows():
        await conn.execute(_sql().add_escrows, [_escrow_row(e) for e in created])
    if changed := books.changed_escrows():
        await conn.execute(
            _sql().change_escrows,
            [
                {
                    "m": e.match_id,
                    "sa": e.stake_a,
                    "sb": e.stake_b,
                    "st": e.status,
                    "closed": op_id(e.closed_by),
                }
                for e in changed
            ],
        )


def _escrow_row(e: Escrow) -> dict[str, Any]:
    return {
        "match_id": e.match_id,
        "player_a": e.player_a,
        "player_b": e.player_b,
        "stake_a": e.stake_a,
        "stake_b": e.stake_b,
        "bet": e.bet,
        "status": e.status,
        "created_ms": e.created_ms,
        "closed_operation_id": op_id(e.closed_by),
    }


async def _save_pools(conn: AsyncConnection, books: Books) -> None:
    if created := books.new_pools():
        await conn.execute(
            _sql().add_pools,
            [
                {
                    "tournament_id": p.tournament_id,
                    "buy_in": p.buy_in,
                    "status": p.status,
                    "entrants": p.entrants,
                    "created_ms": p.created_ms,
                    "closed_operation_id": op_id(p.closed_by),
                }
                for p in created
            ],
        )
    if changed := books.changed_pools():
        await conn.execute(
            _sql().change_pools,
            [
                {
                    "t": p.tournament_id,
                    "b": p.buy_in,
                    "st": p.status,
                    "n": p.entrants,
                    "closed": op_id(p.closed_by),
                }
                for p in changed
            ],
        )


async def _save_holds(conn: AsyncConnection, books: Books) -> None:
    if created := books.new_holds():
        await conn.execute(
            _sql().add_holds,
            [
                {
                    "hold_key": h.hold_key,
                    "match_id": h.match_id,
                    "player_id": h.player_id,
                    "amount": h.amount,
                    "purpose": h.purpose,
                    "cube": h.cube,
                    "status": h.status,
                    "created_ms": h.created_ms,
                    "closed_operation_id": op_id(h.closed_by),
                }
                for h in created
            ],
        )
    if changed := books.changed_holds():
        await conn.execute(
            _sql().change_holds,
            [{"hid": h.id, "st": h.status, "closed": op_id(h.closed_by)} for h in changed],
        )
