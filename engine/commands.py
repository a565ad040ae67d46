"""Commands a seat (or the clock) sends to a table. Plain immutable values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.steps import Step


@dataclass(frozen=True, slots=True)
class Command:
    name: ClassVar[str] = "command"
    seat: int


@dataclass(frozen=True, slots=True)
class Roll(Command):
    name: ClassVar[str] = "roll"


@dataclass(frozen=True, slots=True)
class Move(Command):
    """One checker from `frm` to `to`: one die, or a lit total (25 = bar, 0 = off)."""

    name: ClassVar[str] = "move"
    frm: int
    to: int


@dataclass(frozen=True, slots=True)
class Undo(Command):
    name: ClassVar[str] = "undo"


@dataclass(frozen=True, slots=True)
class Confirm(Command):
    """DONE (wagered), CONTINUE (scored) or "Got it" (scored, no legal move)."""

    name: ClassVar[str] = "confirm"


@dataclass(frozen=True, slots=True)
class SubmitPlay(Command):
    """A whole play at once (I-30), replacing any steps made this turn, then DONE."""

    name: ClassVar[str] = "submit_play"
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class OfferDouble(Command):
    """`both_cover`: the table service checked both players can cover the raise (I-4)."""

    name: ClassVar[str] = "offer_double"
    both_cover: bool = True


@dataclass(frozen=True, slots=True)
class Take(Command):
    """Coverage facts at the take, from the wallet (I-4)."""

    name: ClassVar[str] = "take"
    taker_covers: bool = True
    doubler_covers: bool = True


@dataclass(frozen=True, slots=True)
class Drop(Command):
    name: ClassVar[str] = "drop"


@dataclass(frozen=True, slots=True)
class Resign(Command):
    name: ClassVar[str] = "resign"


@dataclass(frozen=True, slots=True)
class Leave(Command):
    name: ClassVar[str] = "leave"


@dataclass(frozen=True, slots=True)
class Disconnect(Command):
    name: ClassVar[str] = "disconnect"


@dataclass(frozen=True, slots=True)
class Reconnect(Command):
    name: ClassVar[str] = "reconnect"


@dataclass(frozen=True, slots=True)
class Boost(Command):
    """+10 s on the seat's own clock; the service has already spent the diamonds."""

    name: ClassVar[str] = "boost"


@dataclass(frozen=True, slots=True)
class SetAutoRoll(Command):
    name: ClassVar[str] = "set_auto_roll"
    on: bool


@dataclass(frozen=True, slots=True)
class TakeBack(Command):
    """scored test games: take back the last completed turn before the opponent rolls (I-19)."""

    name: ClassVar[str] = "take_back"


@dataclass(frozen=True, slots=True)
class OfferRematch(Command):
    name: ClassVar[str] = "offer_rematch"


@dataclass(frozen=True, slots=True)
class AcceptRematch(Command):
    name: ClassVar[str] = "accept_rematch"


CLOCK_SEAT = -1


@dataclass(frozen=True, slots=True)
class Deadline(Command):
    """The clock: apply whatever the state's next deadline says, if it is due."""

    name: ClassVar[str] = "deadline"
    seat: int = CLOCK_SEAT


@dataclass(frozen=True, slots=True)
class OperatorClose(Command):
    """An operator closes a stuck table undecided: every stake is returned (I-10)."""

    name: ClassVar[str] = "operator_close"
    seat: int = CLOCK_SEAT
