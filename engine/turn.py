"""Step-by-step play of one turn, for clients and for validating submitted plays (I-30).

A `Turn` holds the position at the roll, the dice, and the single-die steps played so far. A
step is allowed when it is legal by itself and the legal plays can still be reached from where
it leads; the turn is complete when the position is the result of a legal play and nothing more
can be played. Lit points are the single-die destinations and, for one checker, the totals of
several dice, except a total that would hit on an intermediate point.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from engine.movegen import Play, legal_plays
from engine.position import Position
from engine.steps import Step, apply_step, is_hit, step_die


class TurnError(ValueError):
    """A step, undo or play that the rules refuse. `code` is stable for clients."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@lru_cache(maxsize=4096)
def _plays(start: Position, dice: tuple[int, int]) -> tuple[Play, ...]:
    return tuple(legal_plays(start, dice))


@lru_cache(maxsize=4096)
def _results(start: Position, dice: tuple[int, int]) -> frozenset[Position]:
    return frozenset(p.result for p in _plays(start, dice))


def dice_values(dice: tuple[int, int]) -> tuple[int, ...]:
    return (dice[0],) * 4 if dice[0] == dice[1] else dice


@lru_cache(maxsize=4096)
def _most(start: Position, dice: tuple[int, int]) -> int:
    """How many dice every legal play uses (0: none can be played)."""
    plays = _plays(start, dice)
    return len(plays[0].steps) if plays else 0


def _reaches(
    start: Position, dice: tuple[int, int], current: Position, remaining: tuple[int, ...]
) -> bool:
    """Can the legal results be reached from `current` with the dice `remaining`?

    `current` is reached from `start` by legal single steps, having used `used` dice. Every
    legal play uses `most` dice, and every sequence of `most` legal steps is a legal play, but
    where one die of two is all that can be played (the higher, when it can be: the results
    decide). Short of `most` dice a position reaches a result when it can play the rest, or is
    one already: that takes bearing off, where a die may be worth more pips than it moves a
    checker (elsewhere each die lowers the mover's pips by its value, so the positions differ).
    The same answers as searching every order of the dice left (tests/engine/test_turn_steps.py),
    without the search."""
    most = _most(start, dice)
    used = (4 if dice[0] == dice[1] else 2) - len(remaining)
    if used > most:
        return False
    if most == 1 and dice[0] != dice[1]:
        results = _results(start, dice)
        return current in results or any(
            apply_step(current, step) in results
            for die in set(remaining)
            for step in _single_steps(current, die)
        )
    if used == most:
        return True
    return _playable(start, dice, current, remaining, most - used)


def _playable(
    start: Position,
    dice: tuple[int, int],
    position: Position,
    remaining: tuple[int, ...],
    count: int,
) -> bool:
    """Whether `count` more legal single steps can be played with dice from `remaining`, or
    `position` is a legal result already (bearing off, all home)."""
    if not any(position.mover[6:]) and position in _results(start, dice):
        return True
    for die in set(remaining):
        rest: tuple[int, ...] | None = None
        for step in _single_steps(position, die):
            if count == 1:
                return True
            if rest is None:
                left = list(remaining)
                left.remove(die)
                rest = tuple(left)
            if _playable(start, dice, apply_step(position, step), rest, count - 1):
                return True
    return False


def _sources(position: Position) -> list[int]:
    """The points the mover's checkers may leave, highest first (the bar alone while it has one)."""
    me = position.mover
    return [25] if me[24] else [p for p in range(24, 0, -1) if me[p - 1]]


def _single_steps(position: Position, die: int) -> Iterator[Step]:
    """The legal single steps of `die`, found one at a time (callers often need only one)."""
    dice = (die,)
    for frm in _sources(position):
        step = (frm, frm - die if frm > die else 0)
        if step_die(position, step, dice) == die:
            yield step


@dataclass(frozen=True, slots=True)
class Turn:
    start: Position
    dice: tuple[int, int]
    steps: tuple[Step, ...] = ()
    groups: tuple[int, ...] = ()  # how many single steps each client action made (for undo)
    used: tuple[int, ...] = ()  # the die each single step used

    @property
    def current(self) -> Position:
        pos = self.start
        for step in self.steps:
            pos = apply_step(pos, step)
        return pos

    @property
    def remaining(self) -> tuple[int, ...]:
        rest = list(dice_values(self.dice))
        for die in self.used:
            rest.remove(die)
        return tuple(sorted(rest, reverse=True))

    @property
    def plays(self) -> tuple[Play, ...]:
        return _plays(self.start, self.dice)

    @property
    def results(self) -> frozenset[Position]:
        return _results(self.start, self.dice)

    def _die_for(self, current: Position, step: Step, remaining: tuple[int, ...]) -> int | None:
        """The die that plays `step` and keeps a legal result reachable (exact die first)."""
        frm, to = step
        candidates = sorted(set(remaining), key=lambda d: (d != frm - to, d))
        for die in candidates:
            if step_die(current, step, (die,)) != die:
                continue
            rest = list(remaining)
            rest.remove(die)
            if _reaches(
                self.start, self.dice, apply_step(current, step), tuple(sorted(rest, reverse=True))
            ):
                return die
        return None

    def is_complete(self) -> bool:
        """The position is a legal play's result and no further step is allowed."""
        current = self.current
        if current not in self.results:
            return False
        remaining = self.remaining
        return not any(
            self._die_for(current, s, remaining) is not None
            for die in set(remaining)
            for s in _single_steps(current, die)
        )

    def _paths(self, frm: int) -> dict[int, list[tuple[Step, ...]]]:
        """Destinations of one checker from `frm`: lit point -> single-step paths reaching it."""
        out: dict[int, list[tuple[Step, ...]]] = {}

        def walk(
            pos: Position, at: int, remaining: tuple[int, ...], path: tuple[Step, ...]
        ) -> None:
            for die in sorted(set(remaining), reverse=True):
                to = max(at - die, 0)
                step = (at, to)
                if step_die(pos, step, (die,)) != die:
                    continue
                rest = list(remaining)
                rest.remove(die)
                rest_t = tuple(sorted(rest, reverse=True))
                nxt = apply_step(pos, step)
                new_path = (*path, step)
                if _reaches(self.start, self.dice, nxt, rest_t):
                    out.setdefault(to, []).append(new_path)
                # Totals go on only through an empty or own point: never hit on the way.
                if to > 0 and rest_t and not is_hit(pos, step) and nxt.mover[24] == 0:
                    walk(nxt, to, rest_t, new_path)

        walk(self.current, frm, self.remaining, ())
        return out

    def lit(self) -> dict[int, list[int]]:
        """Movable checkers (source points) and, for each, its lit destination points."""
        return {frm: list(dests) for frm, dests in _lit(self).items()}

    def _compute_lit(self) -> dict[int, tuple[int, ...]]:
        if not self.steps:
            quiet = _quiet_lit(self.start, self.dice, _most(self.start, self.dice))
            if quiet is not None:
                return quiet
        out = {}
        for frm in _sources(self.current):
            dests = sorted(self._paths(frm), reverse=True)
            if dests:
                out[frm] = tuple(dests)
        return out

    def play(self, frm: int, to: int) -> Turn:
        """Move one checker from `frm` to `to` (one die, or a lit total of several dice)."""
        if not self.remaining:
            raise TurnError("NO_DICE_LEFT", "every die is already used")
        paths = self._paths(frm).get(to)
        if not paths:
            raise TurnError("ILLEGAL_STEP", f"{frm}/{to} is not allowed here")
        path = paths[0]
        turn = self
        used = list(self.used)
        current = self.current
        remaining = self.remaining
        for step in path:
            die = self._die_for(current, step, remaining)
            assert die is not None  # _paths only returns reachable paths
            used.append(die)
            rest = list(remaining)
            rest.remove(die)
            remaining = tuple(sorted(rest, reverse=True))
            current = apply_step(current, step)
        return Turn(
            turn.start,
            turn.dice,
            (*turn.steps, *path),
            (*turn.groups, len(path)),
            tuple(used),
        )

    def undo(self) -> Turn:
        if not self.groups:
            raise TurnError("NOTHING_TO_UNDO", "no step to undo this turn")
        n = self.groups[-1]
        return Turn(self.start, self.dice, self.steps[:-n], self.groups[:-1], self.used[:-n])


def _quiet_lit(
    start: Position, dice: tuple[int, int], most: int
) -> dict[int, tuple[int, ...]] | None:
    """A roll's lit points, counted point by point, when no checker is on the bar and none can
    bear off before the turn's last die (None otherwise: the search decides). Then a step is
    legal when it lands on the board on a point the opponent has not made; the mover's own
    checkers never block and a hit blot changes no made point, so which other steps stay legal
    after one is plain: doubles can always play on (each checker's run of open points only
    shortens by the step taken), different dice when another checker, or this one from where
    it lands, can play the other die. The same answers as the search
    (tests/engine/test_turn_steps.py)."""
    me, opp = start.mover, start.opponent
    hi, lo = max(dice), min(dice)
    doubles = hi == lo
    if me[24] or sum(me[6:24]) < (4 if doubles else 2) or most < (1 if doubles else 2):
        return None

    def open_(point: int) -> bool:
        return point >= 1 and opp[24 - point] < 2

    out: dict[int, tuple[int, ...]] = {}
    sources = _sources(start)  # no checker on the bar here
    if doubles:
        for frm in sources:
            run: list[int] = []
            at = frm
            while len(run) < most and open_(at - hi):
                at -= hi
                run.append(at)
                if opp[24 - at] == 1:  # a total never goes on through a hit
                    break
            if run:
                out[frm] = tuple(run)
        return out
    playable = {die: {p for p in sources if open_(p - die)} for die in (hi, lo)}
    for frm in sources:
        dests: set[int] = set()
        for die, other in ((hi, lo), (lo, hi)):
            to = frm - die
            if not open_(to):
                continue
            left = playable[other]  # another checker plays it, or this one from `to`
            others = len(left) > 1 or (len(left) == 1 and (frm not in left or me[frm - 1] > 1))
            if others or open_(to - other):
                dests.add(to)
            if opp[24 - to] != 1 and open_(to - other):
                dests.add(to - other)
        if dests:
            out[frm] = tuple(sorted(dests, reverse=True))
    return out


@lru_cache(maxsize=4096)
def _lit(turn: Turn) -> dict[int, tuple[int, ...]]:
    # A turn's lit points are asked for by each view of it (the commit's, GetView, the clients').
    return turn._compute_lit()


def validate_play(start: Position, dice: tuple[int, int], steps: tuple[Step, ...]) -> Turn:
    """I-30: each step legal in turn and the final position a legal play's result."""
    turn = _single_die_play(start, dice, steps)
    return turn if turn is not None else _stepped_play(start, dice, steps)


def _single_die_play(
    start: Position, dice: tuple[int, int], steps: tuple[Step, ...]
) -> Turn | None:
    """The turn a play of single-die steps makes, when it is a legal play (else None: the
    caller plays it step by step, which names the fault). Each step takes the die the
    step-by-step play would (the exact die, else the least higher one bearing off): that one
    keeps the result reachable, since the rest of the play reaches it, so both build the
    same turn (`tests/engine/test_turn_steps.py`) without searching each step's paths."""
    current = start
    remaining = list(dice_values(dice))
    used = []
    for step in steps:
        die = step_die(current, step, tuple(remaining))
        if die is None:
            return None
        remaining.remove(die)
        used.append(die)
        current = apply_step(current, step)
    if current not in _results(start, dice):
        return None
    return Turn(start, dice, tuple(steps), (1,) * len(steps), tuple(used))


def _stepped_play(start: Position, dice: tuple[int, int], steps: tuple[Step, ...]) -> Turn:
    turn = Turn(start, dice)
    for frm, to in steps:
        turn = turn.play(frm, to)
    if turn.current not in turn.results:
        raise TurnError("INCOMPLETE_PLAY", "the play does not use the dice the rules require")
    return turn
