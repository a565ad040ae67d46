"""GNU Backgammon's match ID: the match state in 12 characters (import/export).

The key is a 67-bit string, little-endian into 9 bytes, base64 without padding:
bits 1-4 log2(cube), 5-6 cube owner (0, 1, or 3 = centred), 7 player on roll (dice owner),
8 Crawford game, 9-11 game state, 12 whose turn (who decides), 13 double offered, 14-15
resignation offered (0 none, 1 single, 2 gammon, 3 backgammon), 16-18 die 1, 19-21 die 2,
22-36 match length, 37-51 score of player 0, 52-66 score of player 1, and (as gnubg writes
it) bit 67 set when the Jacoby rule is off. Dice are stored higher first.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from enum import IntEnum

_FIELDS = (
    ("cube_log2", 4),
    ("cube_owner", 2),
    ("dice_owner", 1),
    ("crawford", 1),
    ("game_state", 3),
    ("turn", 1),
    ("double_offered", 1),
    ("resigned", 2),
    ("die1", 3),
    ("die2", 3),
    ("match_length", 15),
    ("score0", 15),
    ("score1", 15),
    ("no_jacoby", 1),
)


class GameState(IntEnum):
    NONE = 0
    PLAYING = 1
    OVER = 2
    RESIGNED = 3
    DROPPED = 4


@dataclass(frozen=True, slots=True)
class MatchKey:
    """The match state as GNU Backgammon's match ID carries it. cube_owner -1 = centred."""

    cube: int = 1
    cube_owner: int = -1
    dice_owner: int = 0
    crawford: bool = False
    game_state: GameState = GameState.NONE
    turn: int = 0
    double_offered: bool = False
    resigned: int = 0
    dice: tuple[int, int] = (0, 0)
    match_length: int = 0
    score: tuple[int, int] = (0, 0)
    jacoby: bool = False  # money play only; always off in matches

    def match_id(self) -> str:
        if self.cube < 1 or self.cube & (self.cube - 1) or self.cube > 1 << 15:
            raise ValueError(f"cube must be a power of two up to 32768, got {self.cube}")
        values = {
            "cube_log2": self.cube.bit_length() - 1,
            "cube_owner": 3 if self.cube_owner == -1 else self.cube_owner,
            "dice_owner": self.dice_owner,
            "crawford": int(self.crawford),
            "game_state": int(self.game_state),
            "turn": self.turn,
            "double_offered": int(self.double_offered),
            "resigned": self.resigned,
            "die1": max(self.dice),
            "die2": min(self.dice),
            "match_length": self.match_length,
            "score0": self.score[0],
            "score1": self.score[1],
            "no_jacoby": int(not self.jacoby),
        }
        number, shift = 0, 0
        for name, width in _FIELDS:
            value = values[name]
            if not 0 <= value < 1 << width:
                raise ValueError(f"match ID field {name}={value} does not fit {width} bits")
            number |= value << shift
            shift += width
        return base64.b64encode(number.to_bytes(9, "little")).decode()

    @classmethod
    def from_match_id(cls, mid: str) -> MatchKey:
        if not isinstance(mid, str) or len(mid) != 12:
            raise ValueError(f"match ID must be 12 characters, got {mid!r}")
        try:
            raw = base64.b64decode(mid, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"match ID {mid!r} is not valid base64: {exc}") from None
        number = int.from_bytes(raw, "little")
        if number >> 67:
            raise ValueError(f"match ID {mid!r} has bits beyond the 67 it defines")
        v: dict[str, int] = {}
        shift = 0
        for name, width in _FIELDS:
            v[name] = (number >> shift) & ((1 << width) - 1)
            shift += width
        if v["cube_owner"] == 2:
            raise ValueError(f"match ID {mid!r} has an invalid cube owner")
        if v["game_state"] > 4:
            raise ValueError(f"match ID {mid!r} has an invalid game state")
        if v["die1"] > 6 or v["die2"] > 6:
            raise ValueError(f"match ID {mid!r} has a die above 6")
        return cls(
            cube=1 << v["cube_log2"],
            cube_owner=-1 if v["cube_owner"] == 3 else v["cube_owner"],
            dice_owner=v["dice_owner"],
            crawford=bool(v["crawford"]),
            game_state=GameState(v["game_state"]),
            turn=v["turn"],
            double_offered=bool(v["double_offered"]),
            resigned=v["resigned"],
            dice=(v["die1"], v["die2"]),
            match_length=v["match_length"],
            score=(v["score0"], v["score1"]),
            jacoby=not v["no_jacoby"],
        )
