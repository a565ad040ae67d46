"""Events the match state machine emits: typed, immutable, safe to show both players.

No event carries the dice seed or a future roll before the match ends; `MatchEnded` and
`TableClosed` reveal the seed (I-27) because the match is over.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.steps import Step
from engine.vocabulary import DeadlineKind, DropReason, EndReason, GameResult, PassReason


@dataclass(frozen=True, slots=True)
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        out = {"type": self.type}
        for f in dataclasses.fields(self):
            out[f.name] = getattr(self, f.name)
        return out


@dataclass(frozen=True, slots=True)
class GameStarted(Event):
    type: ClassVar[str] = "game_started"
    game_no: int
    crawford: bool
    score: tuple[int, int]


@dataclass(frozen=True, slots=True)
class OpeningRoll(Event):
    """One die each (seat 0's, seat 1's); `starter` is None on a tie (rolled again)."""

    type: ClassVar[str] = "opening_roll"
    dice: tuple[int, int]
    starter: int | None


@dataclass(frozen=True, slots=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn_started"
    seat: int
    deadline_ms: int | None  # the seat's clock (turn clock or move time), None without one
    your_turn_notice: bool = False  # async mode: tell the player it is their turn (I-25)


@dataclass(frozen=True, slots=True)
class DiceRolled(Event):
    type: ClassVar[str] = "dice_rolled"
    seat: int
    dice: tuple[int, int]
    auto: bool = False  # rolled by auto roll or the clock
    legal_plays: int = 0


@dataclass(frozen=True, slots=True)
class CheckersMoved(Event):
    """Single-die steps (from, to), from the mover's side; `hits` are the points hit."""

    type: ClassVar[str] = "checkers_moved"
    seat: int
    steps: tuple[Step, ...]
    hits: tuple[int, ...]
    auto: bool = False


@dataclass(frozen=True, slots=True)
class StepsUndone(Event):
    type: ClassVar[str] = "steps_undone"
    seat: int
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class AwaitingConfirm(Event):
    """scored: every die used; the turn passes by itself at `deadline_ms` unless undone (I-20)."""

    type: ClassVar[str] = "awaiting_confirm"
    seat: int
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class TurnEnded(Event):
    type: ClassVar[str] = "turn_ended"
    seat: int
    steps: tuple[Step, ...]
    position_id: str  # the board after the play, from the next player's side (gnubg ID)


@dataclass(frozen=True, slots=True)
class TurnPassed(Event):
    """No play: `no_moves` (rolled, nothing can move) or `closed_board` (I-16, not rolled)."""

    type: ClassVar[str] = "turn_passed"
    seat: int
    reason: PassReason
    dice: tuple[int, int] | None = None
    deadline_ms: int | None = None  # scored: passes at this time unless "Got it" comes first


@dataclass(frozen=True, slots=True)
class TimedOut(Event):
    """A clock ran out: `turn` (wagered I-7), `answer` (double unanswered, I-2), `move_time`."""

    type: ClassVar[str] = "timed_out"
    seat: int
    clock: DeadlineKind
    deadline_ms: int
    now_ms: int


@dataclass(frozen=True, slots=True)
class MoveTimeWarning(Event):
    type: ClassVar[str] = "move_time_warning"
    seat: int
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class BoostApplied(Event):
    type: ClassVar[str] = "boost_applied"
    seat: int
    deadline_ms: int
    boosts_left: int
    cost: int


@dataclass(frozen=True, slots=True)
class AutoRollSet(Event):
    type: ClassVar[str] = "auto_roll_set"
    seat: int
    on: bool


@dataclass(frozen=True, slots=True)
class DoubleOffered(Event):
    type: ClassVar[str] = "double_offered"
    seat: int
    cube: int  # the value if taken
    deadline_ms: int | None


@dataclass(frozen=True, slots=True)
class DoubleTaken(Event):
    type: ClassVar[str] = "double_taken"
    seat: int
    cube: int


@dataclass(frozen=True, slots=True)
class DoubleDropped(Event):
    """`reason`: `drop`, `timeout` (I-2) or `cannot_cover` (I-4)."""

    type: ClassVar[str] = "double_dropped"
    seat: int
    reason: DropReason


@dataclass(frozen=True, slots=True)
class DoubleWithdrawn(Event):
    """I-4: the doubler could not cover the raise at the take; play goes on."""

    type: ClassVar[str] = "double_withdrawn"
    seat: int


@dataclass(frozen=True, slots=True)
class GameEnded(Event):
    """`result`: single, gammon, backgammon, resign or drop. `points` include the cube."""

    type: ClassVar[str] = "game_ended"
    game_no: int
    winner: int
    result: GameResult
    points: int
    cube: int
    score: tuple[int, int]


@dataclass(frozen=True, slots=True)
class PlayerAway(Event):
    type: ClassVar[str] = "player_away"
    seat: int
    deadline_ms: int | None


@dataclass(frozen=True, slots=True)
class PlayerBack(Event):
    type: ClassVar[str] = "player_back"
    seat: int


@dataclass(frozen=True, slots=True)
class AwayExpired(Event):
    """I-9: a seat's window ran out while the opponent is away too; the table waits."""

    type: ClassVar[str] = "away_expired"
    seat: int
    waiting_until_ms: int | None


@dataclass(frozen=True, slots=True)
class MatchEnded(Event):
    """The match is decided. `reason`: points, left, away, move_time, doubler_left.

    `scored_points` is the I-18 outcome for scored tables ((0, 0) when nothing is recorded).
    The seed is revealed (I-27).
    """

    type: ClassVar[str] = "match_ended"
    winner: int
    reason: EndReason
    score: tuple[int, int]
    scored_points: tuple[int, int]
    seed_hex: str
    fingerprint: str


@dataclass(frozen=True, slots=True)
class TableClosed(Event):
    """Closed with no winner: every stake returned (I-10). The seed is revealed."""

    type: ClassVar[str] = "table_closed"
    reason: EndReason  # both_away (I-9), async_expired (I-25), abandoned, operator_closed
    seed_hex: str
    fingerprint: str
    left_by: int | None = None  # abandoned: the seat that left (casual Leave)


@dataclass(frozen=True, slots=True)
class TurnTakenBack(Event):
    type: ClassVar[str] = "turn_taken_back"
    seat: int


@dataclass(frozen=True, slots=True)
class RematchOffered(Event):
    type: ClassVar[str] = "rematch_offered"
    seat: int
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class RematchAgreed(Event):
    type: ClassVar[str] = "rematch_agreed"


@dataclass(frozen=True, slots=True)
class RematchExpired(Event):
    type: ClassVar[str] = "rematch_expired"
