"""Single checker moves: the rule for one die, applied to a position.

Shared by step-by-step play, play validation (I-30) and tools. The move generator inlines the
same rule for speed; tests check the two agree.
"""

from __future__ import annotations

from engine.position import Position

Step = tuple[int, int]


class IllegalStep(ValueError):
    """A step that the rules do not allow from this position with these dice."""


def step_die(position: Position, step: Step, dice: tuple[int, ...]) -> int | None:
    """The die (from `dice`) that plays `step` legally here, or None. Prefers an exact die."""
    frm, to = step
    me, opp = position.mover, position.opponent
    if not (1 <= frm <= 25 and 0 <= to <= 24 and to < frm):
        return None
    s = frm - 1
    if not me[s] or (me[24] and frm != 25):
        return None
    if to > 0:
        die = frm - to
        if die not in dice or opp[24 - to] >= 2:
            return None
        return die
    # bearing off
    if any(me[6:25]):
        return None
    if frm in dice:
        return frm
    higher = [d for d in dice if d > frm]
    if higher and not any(me[s + 1 : 6]):
        return min(higher)
    return None


def apply_step(position: Position, step: Step) -> Position:
    """The position after moving one checker `step` (legality is the caller's business)."""
    frm, to = step
    me = list(position.mover)
    opp = list(position.opponent)
    me[frm - 1] -= 1
    if to > 0:
        me[to - 1] += 1
        o = 24 - to
        if opp[o] == 1:
            opp[o] = 0
            opp[24] += 1
    return Position(tuple(me), tuple(opp))


def is_hit(position: Position, step: Step) -> bool:
    to = step[1]
    return to > 0 and position.opponent[24 - to] == 1
