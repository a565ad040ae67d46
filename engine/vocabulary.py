"""The engine's vocabulary: every closed set of names the rules use, as `StrEnum`s.

The values are the wire names (JSON, logs, metrics labels) and never change; the protobuf enums
in `bg.events.v1` / `bg.common.v1` mirror them as `<PREFIX>_<VALUE UPPER>` (a test holds the two
in step). Being `str`s, members compare equal to their values.
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    AWAIT_ROLL = "await_roll"  # the seat on turn may double (if allowed) or roll
    MOVING = "moving"  # dice rolled, steps being played
    CONFIRMING = "confirming"  # scored: every die used, 3 s to undo (I-20)
    NO_MOVE = "no_move"  # scored: no legal move, "Got it" or 3 s (I-20)
    DOUBLE_OFFERED = "double_offered"  # the other seat must take or drop
    BETWEEN_GAMES = "between_games"  # the next game is dealt after a pause
    MATCH_OVER = "match_over"
    CLOSED = "closed"  # closed with no winner, stakes returned


class EndReason(StrEnum):
    POINTS = "points"
    LEFT = "left"  # walked out (I-6, I-18)
    AWAY = "away"  # away past the window (I-9)
    MOVE_TIME = "move_time"  # scored move time ran out (I-18)
    DOUBLER_LEFT = "doubler_left"  # I-4
    BOTH_AWAY = "both_away"  # closed: I-9
    ASYNC_EXPIRED = "async_expired"  # closed: I-25
    ABANDONED = "abandoned"  # closed: a casual party given up
    OPERATOR_CLOSED = "operator_closed"  # closed by an operator: a stuck table (I-10)


class GameResult(StrEnum):
    SINGLE = "single"
    GAMMON = "gammon"
    BACKGAMMON = "backgammon"
    RESIGN = "resign"  # I-5
    DROP = "drop"  # I-2


class DeadlineKind(StrEnum):
    TURN = "turn"
    ANSWER = "answer"
    MOVE_TIME = "move_time"
    MOVE_WARNING = "move_warning"
    AUTO_ROLL = "auto_roll"
    CONFIRM = "confirm"
    NO_MOVE = "no_move"
    NEXT_GAME = "next_game"
    AWAY = "away"
    ASYNC_EXPIRY = "async_expiry"
    REMATCH_EXPIRY = "rematch_expiry"


class PassReason(StrEnum):
    NO_MOVES = "no_moves"  # rolled, nothing can move
    CLOSED_BOARD = "closed_board"  # I-16: on the bar against a closed board, not rolled


class DropReason(StrEnum):
    DROP = "drop"
    TIMEOUT = "timeout"  # I-2
    CANNOT_COVER = "cannot_cover"  # I-4


class RejectionCode(StrEnum):
    """Why `apply` refused a command (also the `Error.code` clients branch on)."""

    WRONG_PHASE = "WRONG_PHASE"
    NOT_YOUR_TURN = "NOT_YOUR_TURN"
    NO_DEADLINE = "NO_DEADLINE"
    NOT_DUE = "NOT_DUE"
    BAD_SEAT = "BAD_SEAT"
    ALREADY_OFFERED = "ALREADY_OFFERED"
    NOT_OFFERED = "NOT_OFFERED"
    ALREADY_AGREED = "ALREADY_AGREED"
    MATCH_OVER = "MATCH_OVER"
    CANNOT_DOUBLE = "CANNOT_DOUBLE"
    CANNOT_COVER = "CANNOT_COVER"
    NOT_AVAILABLE = "NOT_AVAILABLE"
    NO_CLOCK = "NO_CLOCK"
    NO_BOOSTS_LEFT = "NO_BOOSTS_LEFT"
    ALREADY_AWAY = "ALREADY_AWAY"
    NOT_AWAY = "NOT_AWAY"
    CANNOT_TAKE_BACK = "CANNOT_TAKE_BACK"
    UNKNOWN_COMMAND = "UNKNOWN_COMMAND"
    INCOMPLETE_PLAY = "INCOMPLETE_PLAY"
    NO_DICE_LEFT = "NO_DICE_LEFT"
    ILLEGAL_STEP = "ILLEGAL_STEP"
    NOTHING_TO_UNDO = "NOTHING_TO_UNDO"
    TIME_UP = "TIME_UP"  # the seat's clock ran out before the act (I-40); the table plays it
