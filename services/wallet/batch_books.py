"""The books a batch of ledger operations works on: the rows it read (locked), changed in memory.

Pure: no SQL here. A batch loads every account, escrow and hold its operations can touch, then
applies the operations one after another against these books; an operation the rules refuse
is undone (`mark`/`undo`) and changes nothing, the others stay. What to write back is read off
the books at the end (`changed_*`: each row against what was read), so one batch of any size
writes with a handful of statements.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bg.events.v1 import events_pb2
from services.common.errors import NotFound, ServiceError


class InsufficientFunds(ServiceError):
    def __init__(self, players: list[str]) -> None:
        super().__init__(
            "INSUFFICIENT_FUNDS",
            "cannot cover: " + ", ".join(players),
            players=",".join(players),
        )
        self.players = list(players)


@dataclass
class Account:
    id: str
    kind: str
    balance: int


class EscrowStatus(StrEnum):
    """An escrow's state (stored as its value): open until settled or refunded, once."""

    OPEN = "open"
    SETTLED = "settled"
    REFUNDED = "refunded"


class HoldStatus(StrEnum):
    """A hold's state (stored as its value): held until captured or released, once."""

    HELD = "held"
    CAPTURED = "captured"
    RELEASED = "released"


class HoldPurpose(StrEnum):
    RAISE = "raise"  # a double's raise, captured into the escrow at the take
    BOOST = "boost"  # a boost's price, captured to the house when applied
    BUYIN = "buyin"  # a tournament's buy-in, captured into its prize pool at the start


class PoolStatus(StrEnum):
    """A tournament's prize pool (stored as its value): open while buy-ins are held, running
    once they are captured, then paid out or refunded, once. Only an open pool takes holds."""

    OPEN = "open"
    RUNNING = "running"
    PAID = "paid"
    REFUNDED = "refunded"


@dataclass
class Escrow:
    match_id: str
    player_a: str
    player_b: str
    stake_a: int
    stake_b: int
    bet: int
    status: EscrowStatus
    created_ms: int
    closed_by: Draft | int | None = None  # the closing operation (a draft until it has an id)


@dataclass
class Hold:
    id: int | None  # None: placed in this batch
    hold_key: str
    match_id: str
    player_id: str
    amount: int
    purpose: HoldPurpose
    cube: int
    status: HoldStatus
    created_ms: int
    closed_by: Draft | int | None = None


@dataclass
class Pool:
    tournament_id: str
    buy_in: int
    status: PoolStatus
    entrants: int  # the field whose buy-ins were captured (0 until the start)
    created_ms: int
    closed_by: Draft | int | None = None


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
        """Without the operation's id: the row keeps it (a batch learns ids when it writes)."""
        skip = ("replayed", "operation_id")
        return json.dumps({k: v for k, v in self.__dict__.items() if k not in skip}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, operation_id: int) -> Outcome:
        doc = json.loads(text)
        doc["operation_id"] = operation_id  # rows written before batches kept it in the text
        return cls(**doc, replayed=True)


@dataclass
class Draft:
    """One operation applied to the books, waiting for its row (and id) in the batch's write."""

    key: str
    kind: str
    request_hash: str
    match_id: str | None
    memo: str | None
    now: int
    deltas: dict[str, int] = field(default_factory=dict)
    transfers: list[tuple[str, str, int]] = field(default_factory=list)
    outcome: Outcome | None = None
    event: events_pb2.WalletEvent | None = None
    outbox_key: str = ""
    id: int = 0  # set once its row is written


def op_id(ref: Draft | int | None) -> int | None:
    return ref.id if isinstance(ref, Draft) else ref


class Books:
    def __init__(
        self,
        accounts: list[Account],
        escrows: list[Escrow],
        holds: list[Hold],
        pools: Sequence[Pool] = (),
        entered: Mapping[str, set[str]] | None = None,
    ) -> None:
        self.accounts = {a.id: a for a in accounts}
        # player -> tournaments with their buy-in held or in a running pool (Reads.in_play_of)
        self.entered = dict(entered or {})
        self.escrows = {e.match_id: e for e in escrows}
        self.holds = list(holds)
        self.pools = {p.tournament_id: p for p in pools}
        self._read_accounts = {a.id: a.balance for a in accounts}
        self._read_escrows = {e.match_id: dataclasses.replace(e) for e in escrows}
        self._read_pools = {t: dataclasses.replace(p) for t, p in self.pools.items()}
        self._read_holds = {id(h): (h.status, h.closed_by) for h in holds}
        self._undo: list[Callable[[], None]] = []

    # -- undo -------------------------------------------------------------------------------

    def mark(self) -> int:
        return len(self._undo)

    def undo(self, mark: int) -> None:
        while len(self._undo) > mark:
            self._undo.pop()()

    # -- accounts ---------------------------------------------------------------------------

    def balance(self, account: str) -> int | None:
        found = self.accounts.get(account)
        return None if found is None else found.balance

    def ensure(self, account: str, kind: str) -> None:
        if account not in self.accounts:
            self.accounts[account] = Account(account, kind, 0)
            self._undo.append(lambda: self._forget(self.accounts, account))

    def move(self, op: Draft, debit: str, credit: str, amount: int) -> None:
        src, dst = self.accounts[debit], self.accounts[credit]
        if src.kind != "external" and src.balance < amount:  # rule checks come first: a guard
            raise InsufficientFunds([debit])
        src.balance -= amount
        dst.balance += amount
        self._undo.append(lambda: self._unmove(src, dst, amount))
        op.transfers.append((debit, credit, amount))
        op.deltas[debit] = op.deltas.get(debit, 0) - amount
        op.deltas[credit] = op.deltas.get(credit, 0) + amount

    @staticmethod
    def _forget(rows: dict[str, Any], key: str) -> None:
        del rows[key]

    @staticmethod
    def _unmove(src: Account, dst: Account, amount: int) -> None:
        src.balance += amount
        dst.balance -= amount

    # -- escrows ----------------------------------------------------------------------------

    def escrow(self, match_id: str) -> Escrow | None:
        return self.escrows.get(match_id)

    def open_escrow(self, match_id: str) -> Escrow:
        row = self.escrows.get(match_id)
        if row is None:
            raise NotFound("UNKNOWN_MATCH", f"no escrow for match {match_id}", field="match_id")
        if row.status != EscrowStatus.OPEN:
            raise ServiceError(
                "ESCROW_CLOSED",
                f"the escrow of match {match_id} is already {row.status}",
                escrow_status=row.status,  # not `status`: that is the gRPC code
            )
        return row

    def add_escrow(self, row: Escrow) -> None:
        self.escrows[row.match_id] = row
        self._undo.append(lambda: self._forget(self.escrows, row.match_id))

    def change_escrow(self, row: Escrow, **values: object) -> None:
        before = dataclasses.replace(row)
        for name, value in values.items():
            setattr(row, name, value)
        self._undo.append(lambda: row.__dict__.update(before.__dict__))

    # -- pools ------------------------------------------------------------------------------

    def pool(self, tournament_id: str) -> Pool | None:
        return self.pools.get(tournament_id)

    def add_pool(self, row: Pool) -> None:
        self.pools[row.tournament_id] = row
        self._undo.append(lambda: self._forget(self.pools, row.tournament_id))

    def change_pool(self, row: Pool, **values: object) -> None:
        before = dataclasses.replace(row)
        for name, value in values.items():
            setattr(row, name, value)
        self._undo.append(lambda: row.__dict__.update(before.__dict__))

    def new_pools(self) -> list[Pool]:
        return [p for t, p in self.pools.items() if t not in self._read_pools]

    def changed_pools(self) -> list[Pool]:
        return [
            p for t, p in self.pools.items() if t in self._read_pools and p != self._read_pools[t]
        ]

    # -- holds ------------------------------------------------------------------------------

    def holds_of_key(self, hold_key: str) -> list[Hold]:
        return [h for h in self.holds if h.hold_key == hold_key]

    def open_holds_of(self, match_id: str) -> list[Hold]:
        return [h for h in self.holds if h.match_id == match_id and h.status == HoldStatus.HELD]

    def add_hold(self, hold: Hold) -> None:
        self.holds.append(hold)
        self._undo.append(lambda: self.holds.remove(hold))

    def close_hold(self, hold: Hold, status: HoldStatus, op: Draft) -> None:
        before = (hold.status, hold.closed_by)
        hold.status, hold.closed_by = status, op
        self._undo.append(lambda: self._reopen(hold, before))

    @staticmethod
    def _reopen(hold: Hold, before: tuple[HoldStatus, Draft | int | None]) -> None:
        hold.status, hold.closed_by = before

    # -- an operation's end -----------------------------------------------------------------

    def finish(
        self, op: Draft, outcome: Outcome, event: events_pb2.WalletEvent, outbox_key: str
    ) -> Outcome:
        """The answer (each account's change and its balance after this operation) and the
        event; ids are filled in when the batch writes."""
        outcome.changes = {a: [d, self.accounts[a].balance] for a, d in op.deltas.items()}
        event.kind = op.kind
        event.at_ms = op.now
        for account, delta in op.deltas.items():
            if account.startswith("player:"):
                event.player_deltas[account.removeprefix("player:")] = delta
        op.outcome, op.event, op.outbox_key = outcome, event, outbox_key
        return outcome

    # -- what to write ----------------------------------------------------------------------

    def new_accounts(self) -> list[Account]:
        return [a for a in self.accounts.values() if a.id not in self._read_accounts]

    def changed_balances(self) -> dict[str, int]:
        """Existing accounts' deltas over the whole batch."""
        return {
            a.id: a.balance - self._read_accounts[a.id]
            for a in self.accounts.values()
            if a.id in self._read_accounts and a.balance != self._read_accounts[a.id]
        }

    def new_escrows(self) -> list[Escrow]:
        return [e for m, e in self.escrows.items() if m not in self._read_escrows]

    def changed_escrows(self) -> list[Escrow]:
        return [
            e
            for m, e in self.escrows.items()
            if m in self._read_escrows and e != self._read_escrows[m]
        ]

    def new_holds(self) -> list[Hold]:
        return [h for h in self.holds if h.id is None]

    def changed_holds(self) -> list[Hold]:
        return [
            h
            for h in self.holds
            if h.id is not None and (h.status, h.closed_by) != self._read_holds[id(h)]
        ]
