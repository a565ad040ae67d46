"""Match state: what both players may see (`MatchState`) and what only the server knows.

`TableState` pairs them. The seed and the dice cursor live in `Secret`; views and events are
built from `MatchState` only, so no code path can leak a future roll.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.position import Position
from engine.profiles import RulesOptions
from engine.turn import Turn
from engine.vocabulary import EndReason, GameResult, Phase

__all__ = ["IN_GAME", "GameRecord", "MatchState", "Phase", "Secret", "Snapshot", "TableState"]

Side = tuple[int, ...]


IN_GAME = frozenset(
    {Phase.AWAIT_ROLL, Phase.MOVING, Phase.CONFIRMING, Phase.NO_MOVE, Phase.DOUBLE_OFFERED}
)


@dataclass(frozen=True, slots=True)
class Secret:
    seed: bytes
    cursor: int = 0  # bytes of the dice stream consumed (I-27)


@dataclass(frozen=True, slots=True)
class GameRecord:
    game_no: int
    winner: int
    result: GameResult
    points: int
    cube: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The start of a seat's last completed turn (scored test games' take-back, I-19)."""

    seat: int
    sides: tuple[Side, Side]
    dice: tuple[int, int]


@dataclass(frozen=True, slots=True)
class MatchState:
    options: RulesOptions
    fingerprint: str
    phase: Phase
    sides: tuple[Side, Side]  # seat 0's and seat 1's checkers, each from its own side
    turn: int  # the seat whose turn it is (while a double is offered: the doubler)
    game_no: int = 1
    score: tuple[int, int] = (0, 0)
    cube: int = 1
    cube_owner: int = -1  # -1 centred, else the seat that owns it
    crawford_game: bool = False
    crawford_done: bool = False
    dice: tuple[int, int] | None = None
    play: Turn | None = None  # MOVING/CONFIRMING: the turn being played
    phase_started_ms: int = 0  # turn start, or start of a confirm/no-move/between-games window
    clock_deadline_ms: int | None = None  # the clock of the seat that must act, if any
    paused_remaining_ms: int | None = None  # the doubler's time left while a double is answered
    warned: bool = False  # scored: the 30 s warning of this turn was sent
    boosts_used: tuple[int, int] = (0, 0)
    double_withdrawn: bool = False  # I-4: the doubler could not cover; no second offer this turn
    auto_roll: tuple[bool, bool] = (False, False)
    away_since_ms: tuple[int | None, int | None] = (None, None)
    away_expired: tuple[bool, bool] = (False, False)
    last_activity_ms: int = 0
    last_winner: int | None = None
    games: tuple[GameRecord, ...] = ()
    rolls: tuple[tuple[int, int], ...] = ()  # every draw so far, in order (public once rolled)
    last_turn: Snapshot | None = None
    winner: int | None = None
    end_reason: EndReason | None = None
    ended_ms: int | None = None
    rematch_offered_by: int | None = None
    rematch_agreed: bool = False

    def position(self, seat: int) -> Position:
        """The board from `seat`'s side (as if `seat` were on roll)."""
        return Position(self.sides[seat], self.sides[1 - seat])

    @property
    def decider(self) -> int:
        """The seat that must act now (the taker while a double is offered)."""
        return 1 - self.turn if self.phase is Phase.DOUBLE_OFFERED else self.turn

    @property
    def finished(self) -> bool:
        return self.phase in (Phase.MATCH_OVER, Phase.CLOSED)


@dataclass(frozen=True, slots=True)
class TableState:
    match: MatchState
    secret: Secret
