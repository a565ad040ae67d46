"""The leaderboard's port to its boards (`BoardRepository`) and the types it speaks in. The
service's is services/leaderboard/adapters/sql_boards.py (SQL the record, Redis sorted sets the
ranks); the unit tests run on an in-memory one (tests/leaderboard/memory_boards.py), held to it
by the same tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from bg.events.v1 import events_pb2
from services.leaderboard import boards
from services.leaderboard.effects import Effects

Ranked = tuple[int, str, float]  # (rank from 1, player, score)


@dataclass
class Profile:
    """A player's standings from the record: board -> key -> value, and their rating."""

    trophies: dict[str, int] = field(default_factory=dict)
    league: dict[str, int] = field(default_factory=dict)
    scored: dict[str, int] = field(default_factory=dict)
    tournaments: dict[str, int] = field(default_factory=dict)  # wins: "all" and per season
    rating: float = boards.START_RATING
    experience: int = 0
    rated_matches: int = 0
    rating_course: list[tuple[str, int, float]] = field(default_factory=list)  # match, at, after
    record: dict[str, tuple[int, int]] = field(default_factory=dict)  # profile -> (won, lost)


COURSE_POINTS = 50  # a profile's rating course: the last this many rated matches


@dataclass(frozen=True)
class Change:
    """One board's value before and after one applied event, for one player."""

    board: str
    key: str
    before: float
    after: float


BOARD_ORDER = ("trophies", "league", "scored", "rating", "tournaments")


def merged(changes: list[Change]) -> list[Change]:
    """A match's changes given oldest first, one per board and key, from the first's before to
    the last's after (a match's games each add trophies, then its end the match's); boards in
    BOARD_ORDER, a board's keys in order. A board that one match moves more than once only gains
    (trophies), so the stores order events of the same millisecond by value."""
    out: dict[tuple[str, str], Change] = {}
    for c in changes:
        first = out.get((c.board, c.key), c)
        out[(c.board, c.key)] = Change(c.board, c.key, first.before, c.after)
    order = {board: i for i, board in enumerate(BOARD_ORDER)}
    return sorted(out.values(), key=lambda c: (order.get(c.board, len(order)), c.key))


class BoardRepository(Protocol):
    async def apply(self, event_id: str, at_ms: int, fx: Effects) -> bool:
        """Apply an event's effects once; False for an event id already applied."""
        ...

    async def archive(self, event: events_pb2.TableEvent) -> bool: ...

    async def history(self, player: str, limit: int, before_ms: int) -> list[bytes]:
        """A player's archived match end events, newest first, ended before `before_ms` (0:
        any)."""
        ...

    async def archived(self, match_id: str) -> bytes | None: ...

    async def archive_wallet(self, event: events_pb2.WalletEvent) -> bool:
        """Keep a wallet event (once per event id) with the players it concerns."""
        ...

    async def archive_tournament(self, event: events_pb2.TournamentEvent) -> bool:
        """Keep a finished tournament's result (once per tournament) with its players' ranks."""
        ...

    async def archived_events(self, player: str | None = None) -> list[tuple[str, bytes]]:
        """The archive as (logical topic, serialized event), oldest first: every finished
        match's end event (with its moves), every wallet event and every tournament's result;
        only `player`'s when given."""
        ...

    async def top(self, board: str, key: str, limit: int, offset: int = 0) -> list[Ranked]: ...

    async def changes(self, source: str, player: str) -> list[Change]:
        """What the events of one match (or tournament) changed for a player, oldest first, one
        row per event and board."""
        ...

    async def rank(
        self, board: str, key: str, player: str, around: int
    ) -> tuple[int, float, list[Ranked]]:
        """(rank, score, neighbours) with rank 0 when the player is not on the board."""
        ...

    async def size(self, board: str, key: str) -> int: ...

    async def profile(self, player: str) -> Profile: ...

    async def resync(self) -> None:
        """Rebuild the ranks from the record (after a crash between the two)."""
        ...

    async def reset(self) -> None:
        """Empty the boards, keeping the archive (before a rebuild from it)."""
        ...
