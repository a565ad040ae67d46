"""Legal plays, exactly the set GNU Backgammon generates.

A play uses as many dice as possible; if only one of two different dice can be used, the higher
one when it can; doubles give four moves; a checker on the bar must enter first; bearing off needs
all fifteen home, and a die higher than the highest occupied point bears off from that point.
Plays are distinct by their resulting position.

Canonical order (I-7, "the first legal moves it finds"): a depth-first search tries the higher
die first (for different dice, every higher-then-lower play before the lower-then-higher ones),
and at each step tries source points from the bar (25) down to the 1-point; for doubles, each
move starts on the same point as the previous one or a lower one. A play's `steps` are the first
sequence that reached its result, and plays are listed in the order their results were first
reached. The first play is therefore the one the clock plays on a timeout. (The order is pinned
by a snapshot test; changing the search changes timeouts.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.position import Position

Step = tuple[int, int]  # (from, to): 1-based from the mover's side, 25 = bar, 0 = off


@dataclass(frozen=True, slots=True)
class Play:
    """One legal play: the single-die steps in order, and the position after them (mover's side)."""

    steps: tuple[Step, ...]
    result: Position

    def notation(self, start: Position) -> str:
        """GNU Backgammon notation of this play from `start`, e.g. `24/20*/16 13/11(2)`."""
        return format_steps(start, self.steps)


def _point(p: int) -> str:
    return "bar" if p == 25 else "off" if p == 0 else str(p)


def format_steps(start: Position, steps: tuple[Step, ...]) -> str:
    """GNU Backgammon's notation: moves by decreasing source, one checker's moves joined
    (hit intermediate points kept and starred), identical moves counted as `(n)`."""
    opp = start.opponent

    def hits(point: int) -> bool:
        return 0 < point < 25 and opp[24 - point] > 0

    chains: list[list[int] | None] = [
        [a, b] for a, b in sorted(steps, key=lambda s: (-s[0], -s[1]))
    ]
    for i, chain in enumerate(chains):
        for j in range(i, len(chains)):
            other = chains[j]
            if chain is None or other is None or j == i or chain[-1] != other[0]:
                continue
            if hits(chain[-1]):
                chain.append(other[-1])  # a hit on the way: keep the intermediate point
            else:
                chain[-1] = other[-1]
            chains[j] = None
    joined = [c for c in chains if c is not None]
    counted: list[tuple[list[int], int]] = []
    for chain in joined:
        for k, (seen, n) in enumerate(counted):
            if seen == chain:
                counted[k] = (seen, n + 1)
                break
        else:
            counted.append((chain, 1))
    starred: set[int] = set()
    parts = []
    for chain, n in counted:
        text = _point(chain[0])
        for mid in chain[1:-1]:
            text += f"/{_point(mid)}*"
            starred.add(mid)
        dest = chain[-1]
        text += f"/{_point(dest)}"
        if hits(dest) and dest not in starred:
            text += "*"
            starred.add(dest)
        parts.append(text + (f"({n})" if n > 1 else ""))
    return " ".join(parts)


def check_dice(dice: tuple[int, int]) -> tuple[int, int]:
    if len(dice) != 2 or not all(isinstance(d, int) and 1 <= d <= 6 for d in dice):
        raise ValueError(f"dice must be two integers 1..6, got {dice!r}")
    return dice[0], dice[1]


def legal_plays(position: Position, dice: tuple[int, int]) -> list[Play]:
    """Every legal play for the player on roll, in canonical order; [] when nothing can move."""
    d1, d2 = check_dice(dice)
    hi, lo = (d1, d2) if d1 >= d2 else (d2, d1)
    me = list(position.mover)
    opp = position.opponent
    # The opponent's points never change during a play except blots being hit, so what blocks
    # and what can be hit is computed once (indexed by the mover's 0-based point).
    blocked = [opp[23 - t] >= 2 for t in range(24)]
    blot = [opp[23 - t] == 1 for t in range(24)]
    doubles = hi == lo
    seq = (hi, hi, hi, hi) if doubles else (hi, lo)
    # result key -> [dice used, steps, used the higher die (for one-die plays)]
    found: dict[object, list[Any]] = {}
    path: list[Step] = []

    def record(used: int, hits: int, higher: bool) -> None:
        mine = bytes(me)
        key = mine if not hits else (mine, hits)
        entry = found.get(key)
        if entry is None or used > entry[0]:
            found[key] = [used, tuple(path), higher, hits, mine]

    def search(depth: int, top: int, outside: int, hits: int) -> None:
        die = seq[depth]
        last = depth + 1 == len(seq)
        moved = False
        if me[24]:
            sources: Any = (24,)
        else:
            sources = [s for s in range(top, -1, -1) if me[s]]
        for s in sources:
            t = s - die
            if t >= 0:
                if blocked[t]:
                    continue
                hit = blot[t] and not (hits >> t) & 1
                me[s] -= 1
                me[t] += 1
                new_outside = outside - 1 if s >= 6 > t else outside
                new_hits = hits | (1 << t) if hit else hits
                path.append((s + 1, t + 1))
                if last:
                    record(depth + 1, new_hits, die == hi)
                else:
                    search(depth + 1, s if doubles else 24, new_outside, new_hits)
                path.pop()
                me[t] -= 1
                me[s] += 1
                moved = True
            elif not outside and (t == -1 or not any(me[s + 1 : 6])):
                me[s] -= 1
                path.append((s + 1, 0))
                if last:
                    record(depth + 1, hits, die == hi)
                else:
                    search(depth + 1, s if doubles else 24, outside, hits)
                path.pop()
                me[s] += 1
                moved = True
        if not moved and depth > 0:
            record(depth, hits, seq[0] == hi)

    def pair(a: int, b: int, outside: int, same_checker_only: bool) -> bool:
        """Plays of die `a` then die `b`; True if some play used both."""
        both = False
        sources = (24,) if me[24] else [s for s in range(24, -1, -1) if me[s]]
        for s in sources:
            t = s - a
            if t >= 0:
                if blocked[t]:
                    continue
                hits = (1 << t) if blot[t] else 0
                me[s] -= 1
                me[t] += 1
                out1 = outside - 1 if s >= 6 > t else outside
                first = (s + 1, t + 1)
            elif not outside and (t == -1 or not any(me[s + 1 : 6])):
                hits = 0
                me[s] -= 1
                out1 = outside
                first = (s + 1, 0)
            else:
                continue
            moved = False
            if same_checker_only:
                second: Any = (t,) if t >= 0 else ()
            elif me[24]:
                second = (24,)
            else:
                second = [x for x in range(24, -1, -1) if me[x]]
            for s2 in second:
                t2 = s2 - b
                if t2 >= 0:
                    if blocked[t2]:
                        continue
                    hits2 = hits | (1 << t2) if blot[t2] else hits
                    me[s2] -= 1
                    me[t2] += 1
                    path[:] = [first, (s2 + 1, t2 + 1)]
                    record(2, hits2, True)
                    me[t2] -= 1
                    me[s2] += 1
                    moved = True
                elif not out1 and (t2 == -1 or not any(me[s2 + 1 : 6])):
                    me[s2] -= 1
                    path[:] = [first, (s2 + 1, 0)]
                    record(2, hits, True)
                    me[s2] += 1
                    moved = True
            if not moved and not same_checker_only:
                path[:] = [first]
                record(1, hits, a == hi)
            both = both or moved
            if t >= 0:
                me[t] -= 1
            me[s] += 1
        path.clear()
        return both

    outside = sum(me[6:25])
    if doubles:
        search(0, 24, outside, 0)
    else:
        # Two different dice. Without a checker on the bar and with two or more checkers
        # outside home (so no bear-off either way), playing lo then hi with two different
        # checkers reaches what hi then lo already reached: only one checker moving lo then
        # hi adds results. Elsewhere (bar, bear-off) both orders are searched in full.
        simple = not me[24] and outside >= 2
        two = pair(hi, lo, outside, False)
        pair(lo, hi, outside, simple and two)
    if not found:
        return []
    most = max(entry[0] for entry in found.values())
    keep = [entry for entry in found.values() if entry[0] == most]
    if most == 1 and not doubles and any(entry[2] for entry in keep):
        keep = [entry for entry in keep if entry[2]]
    return [Play(entry[1], _result(position, entry[4], entry[3])) for entry in keep]


def _result(position: Position, mine: bytes, hits: int) -> Position:
    if not hits:
        return Position(tuple(mine), position.opponent)
    opp = list(position.opponent)
    for t in range(24):
        if (hits >> t) & 1:
            opp[23 - t] = 0
            opp[24] += 1
    return Position(tuple(mine), tuple(opp))
