"""Backgammon positions: immutable, player-relative, with GNU Backgammon's position ID.

A `Position` is seen from the player on roll ("mover"). Each side is a tuple of 25 counts from
its owner's point of view: index 0..23 are points 1..24, index 24 is the bar. A mover's checker
on point p faces the opponent's point 25 - p. Checkers not on the board are borne off.

Position ID (as GNU Backgammon reads and writes it): an 80-bit string, for the player NOT on roll
and then the player on roll, each point 1..24 then the bar, as many 1 bits as checkers followed
by a 0; little-endian into 10 bytes; base64 without padding (14 characters). (gnubg's manual says
"player on roll first"; the program itself, and so every ID it prints, puts the opponent first.
We follow the program: `tests/engine/test_position.py` proves it against gnubg.)
"""

from __future__ import annotations

import base64
import binascii
import operator
from dataclasses import dataclass
from functools import lru_cache

CHECKERS = 15
BAR = 24  # index of the bar in a side tuple
POINTS = 24
_B64 = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

_START_SIDE = (0, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0)


@lru_cache(maxsize=8192)
def _gnubg_key(first: tuple[int, ...], second: tuple[int, ...]) -> bytes:
    """The 80 bits as an integer: per point, `count` ones then a zero, little-endian."""
    value = 0
    at = 0
    for side in (first, second):
        for count in side:
            value |= ((1 << count) - 1) << at
            at += count + 1
    return value.to_bytes(10, "little")


@lru_cache(maxsize=8192)
def _gnubg_id(first: tuple[int, ...], second: tuple[int, ...]) -> str:
    # Views and events ask for the IDs of the same few positions again and again.
    return base64.b64encode(_gnubg_key(first, second)).decode()[:14]


@dataclass(frozen=True, slots=True)
class Position:
    """The board from the side of the player on roll (`mover`)."""

    mover: tuple[int, ...]
    opponent: tuple[int, ...]

    @classmethod
    def start(cls) -> Position:
        return cls(_START_SIDE, _START_SIDE)

    @classmethod
    def from_sides(cls, mover: tuple[int, ...], opponent: tuple[int, ...]) -> Position:
        """Build and validate a position (raises ValueError on an impossible one)."""
        pos = cls(tuple(mover), tuple(opponent))
        pos.validate()
        return pos

    def validate(self) -> None:
        for name, side in (("mover", self.mover), ("opponent", self.opponent)):
            if len(side) != 25:
                raise ValueError(f"{name} side must have 25 entries (24 points and the bar)")
            if any(n < 0 for n in side):
                raise ValueError(f"{name} side has a negative count")
            if sum(side) > CHECKERS:
                raise ValueError(f"{name} side has {sum(side)} checkers; at most {CHECKERS}")
        for p in range(1, 25):
            if self.mover[p - 1] and self.opponent[24 - p]:
                raise ValueError(f"both sides have checkers on the mover's point {p}")

    # -- GNU Backgammon position ID ----------------------------------------------------------

    def gnubg_id(self) -> str:
        return _gnubg_id(self.opponent, self.mover)

    @classmethod
    def from_gnubg_id(cls, pid: str) -> Position:
        """Parse a 14-character position ID; ValueError names what is wrong."""
        if not isinstance(pid, str) or len(pid) != 14:
            raise ValueError(f"position ID must be 14 characters, got {pid!r}")
        bad = sorted(set(pid) - _B64)
        if bad:
            raise ValueError(f"position ID {pid!r} has invalid characters {''.join(bad)!r}")
        try:
            key = base64.b64decode(pid + "==", validate=True)
        except binascii.Error as exc:
            raise ValueError(f"position ID {pid!r} is not valid base64: {exc}") from None
        bits = [(key[i >> 3] >> (i & 7)) & 1 for i in range(80)]
        sides: list[list[int]] = []
        i = 0
        for _ in range(2):
            side = []
            for _point in range(25):
                count = 0
                while i < 80 and bits[i]:
                    count += 1
                    i += 1
                if i >= 80:
                    raise ValueError(f"position ID {pid!r} ends in the middle of the board")
                i += 1  # the 0 that ends this point
                side.append(count)
            sides.append(side)
        if any(bits[i:]):
            raise ValueError(f"position ID {pid!r} has checkers beyond both boards")
        opponent, mover = sides
        for name, side in (("player on roll", mover), ("opponent", opponent)):
            if sum(side) > CHECKERS:
                raise ValueError(f"position ID {pid!r}: {name} has {sum(side)} checkers (max 15)")
        pos = cls(tuple(mover), tuple(opponent))
        pos.validate()
        return pos

    # -- facts -------------------------------------------------------------------------------

    def flip(self) -> Position:
        """The same board seen by the other player (who is then on roll)."""
        return Position(self.opponent, self.mover)

    @property
    def mover_pips(self) -> int:
        return pip_count(self.mover)

    @property
    def opponent_pips(self) -> int:
        return pip_count(self.opponent)

    @property
    def mover_off(self) -> int:
        return CHECKERS - sum(self.mover)

    @property
    def opponent_off(self) -> int:
        return CHECKERS - sum(self.opponent)

    def __str__(self) -> str:
        return self.gnubg_id()


_POINT_NUMBERS = range(1, 26)  # points 1..24 from the owner's side, then the bar (25)


def pip_count(side: tuple[int, ...]) -> int:
    """Point number times checkers from the owner's side, the bar counting 25 (in C: every
    commit counts both seats' pips for their views)."""
    return sum(map(operator.mul, _POINT_NUMBERS, side))
