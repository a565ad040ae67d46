"""The table core's ports: what `TableCore` needs from a store and from the wallet, and the
types it speaks in (its adapters import them from here).

`services/table/adapters/redis_store.py` is the store's implementation (Redis, one Lua script
per atomic change); the unit tests run the core on an in-memory one (tests/table/memory_store.py),
and a contract test holds both to the same behaviour. The clock worker and the Kafka relay work
on the Redis store's shard sets directly: they are its integration paths."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Protocol, TypedDict

from engine.state import TableState


class TableMeta(TypedDict):
    """Who plays which match at a table: set when a match is dealt, kept beside the state."""

    table_id: str
    match_id: str
    player_ids: list[str]  # by seat


@dataclass(frozen=True)
class Loaded:
    seq: int
    state: TableState
    meta: TableMeta
    relayed: int


class CommitStatus(StrEnum):
    """How a commit ended (the commit script returns the value)."""

    OK = "OK"
    CONFLICT = "CONFLICT"  # the table moved on since it was read
    DUP = "DUP"  # the command was applied before: its result, nothing written
    NO_TABLE = "NO_TABLE"
    EXISTS = "EXISTS"  # a create found the table there
    # The commit's `now` is ahead of the store's clock (a timeout would fire early), or trails
    # it past the bound (a stalled estimate): refused; `seq` carries the store's clock, ms.
    CLOCK_AHEAD = "CLOCK_AHEAD"
    CLOCK_BEHIND = "CLOCK_BEHIND"


@dataclass(frozen=True)
class Entry:
    """One event as the relay sends it: its seq and bytes, its kind, and on a commit's first
    event how many the commit made (0: not a first event, or written before kinds)."""

    seq: int
    data: bytes
    kind: str
    opens: int


@dataclass(frozen=True)
class CommitResult:
    status: CommitStatus
    seq: int
    count: int = 0  # DUP: how many events the original command produced
    sooner: bool = False  # OK: the commit brought its shard's earliest deadline sooner


@dataclass(frozen=True)
class MatchRecord:
    """A finished match as the table keeps it, its seed revealed: written by the commit that
    ends the match (in the same script), read by GetMatchRecord and the wallet's reconciler
    (through the outcome). Serialised once, as JSON, when it is stored."""

    table_id: str
    match_id: str
    player_ids: tuple[str, ...]  # by seat
    profile: str
    seed_hex: str
    fingerprint: str  # sha256(seed), published at the start
    rolls: tuple[tuple[int, int], ...]  # every draw in order
    winner: int  # seat, -1: closed without one
    end_reason: str  # an engine EndReason value, "" for none
    score: tuple[int, ...]
    cube: int  # the highest cube of the match's games
    boosts: tuple[tuple[int, int, int], ...] = ()  # (game, seat, boost no) of each boost applied

    def encode(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def decode(cls, raw: str | bytes) -> MatchRecord:
        d = json.loads(raw)
        return cls(
            table_id=d["table_id"],
            match_id=d["match_id"],
            player_ids=tuple(d["player_ids"]),
            profile=d.get("profile", ""),
            seed_hex=d["seed_hex"],
            fingerprint=d["fingerprint"],
            rolls=tuple((int(a), int(b)) for a, b in d["rolls"]),
            winner=int(d["winner"]),
            end_reason=d.get("end_reason") or "",
            score=tuple(d.get("score", ())),
            cube=int(d.get("cube", 1)),
            boosts=tuple((int(g), int(s), int(n)) for g, s, n in d.get("boosts", ())),
        )  # records written before this type kept a move list too: ignored


class OutcomeState(StrEnum):
    UNKNOWN = "unknown"  # no such match at the table (never dealt, or long forgotten)
    PLAYING = "playing"
    CLOSED = "closed"  # ended without a winner: every stake refunded
    ENDED = "ended"


@dataclass(frozen=True)
class Outcome:
    """How a match stands, for the wallet's reconciler: settle, refund or wait."""

    state: OutcomeState
    winner_id: str = ""
    cube: int = 0  # ENDED: the final cube
    applied_boosts: tuple[str, ...] = ()  # the hold keys of the boosts the match applied


@dataclass(frozen=True)
class Commit:
    """One transition of a table, as the core hands it to the store."""

    table_id: str
    expected_seq: int | None  # None: create the table
    state: TableState
    deadline_ms: int | None  # None: clear it
    command_field: str  # "" for no command (a clock's, a create)
    events: list[bytes]
    now_ms: int
    meta: TableMeta | None = None  # set with the match (a create, a new match)
    update: bytes = b""  # published to the table's gateways once committed
    record: MatchRecord | None = None  # written when this commit ends the match
    kinds: list[str] | None = None  # the events' kinds (the relay's record headers)
    # Publish the clock wake-up when the shard's earliest deadline comes sooner (False: the
    # committing replica's own clock worker looks after the shard; the result tells it).
    wake: bool = True


def command_field(seat: int, command_id: str) -> str:
    """Command ids are scoped to the seat that sends them (I-34): the field a store remembers a
    command's result under ("" for no id)."""
    return f"{seat}:{command_id}" if command_id else ""


class LocalClock(Protocol):
    """The clock worker in the committing replica's process, if one runs there."""

    def looks_after(self, shard: int) -> bool:
        """This worker fires `shard`'s deadlines (its replica holds the shard's lease)."""
        ...

    def sooner(self, shard: int, at_ms: int) -> None:
        """A commit here brought `shard`'s earliest deadline to `at_ms`."""
        ...


class TableRepository(Protocol):
    async def load(self, table_id: str) -> Loaded | None:
        """The table now (seq, state, meta, relayed pointer), or None for no table."""
        ...

    async def commit(self, c: Commit) -> CommitResult:
        """All or nothing: the new state at seq + len(events) if the table is at
        `expected_seq` (None creates it: EXISTS if it is there), the events appended, the
        deadline set (None clears it), the command field remembered (DUP when seen before), the
        update published, the record kept (the commit that ends a match)."""
        ...

    async def command_result(self, table_id: str, field: str) -> tuple[int, int] | None:
        """(seq after, events produced) of an applied command, or None."""
        ...

    async def events(
        self, table_id: str, after_seq: int, count: int = 500
    ) -> list[tuple[int, bytes]]:
        """Serialized events after `after_seq`, in order, at most `count`."""
        ...

    async def reschedule(self, table_id: str, seq: int, deadline_ms: int | None) -> bool:
        """Set the deadline if the table is still at `seq` (a stale entry put back in line)."""
        ...

    async def unschedule(self, table_id: str) -> None: ...

    async def wake(self, shard: int, at_ms: int) -> None:
        """Tell every clock worker that `shard`'s earliest deadline is now `at_ms`."""
        ...

    async def get_record(self, table_id: str, match_id: str) -> MatchRecord | None: ...

    async def get_prefs(self, player_id: str) -> dict[str, str]: ...

    async def set_prefs(self, player_id: str, **prefs: str) -> None: ...


class WalletPort(Protocol):
    """What a wagered table needs of the wallet (services/table/adapters/grpc_wallet.py): a
    double's raise is held at the offer and a boost's price before its commit (holds,
    services/wallet/ledger.py); both are captured once the commit happened."""

    async def hold_raise(self, key: str, match_id: str, cube: int) -> None: ...
    async def hold_spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> None: ...
    async def capture(self, hold_key: str) -> None: ...
