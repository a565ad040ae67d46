"""Legal plays, exactly the set GNU Backgammon generates.

A play uses as many dice as possible; if only one of two different dice can be used, the higher
one when it can; doubles give four moves; a checker on the bar must enter first; bearing off needs
all fifteen home, and a die higher than the highest occupied point bears off from that point.
Plays are distinct by their resulting position.

Canonical order (I-7, "the first legal moves it finds"): a depth-first search tries the higher
die first (for different dice, the order higher-then-lower before lower-then-higher), and at each
step tries source points from the bar (25) down to the 1-point; for doubles, each move starts on
the same point as the previous one or a lower one. A play's `steps` are the first sequence that
reached its result, and plays are listed in the order their results were first reached. The first
play is therefore the one the clock plays on a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    opp = list(position.opponent)
    # result key -> [dice used, steps, used the higher die (for one-die plays)]
    found: dict[bytes, list[object]] = {}
    order: list[bytes] = []
    path: list[Step] = []

    def record(used: int, higher: bool) -> None:
        key = bytes(me) + bytes(opp)
        entry = found.get(key)
        if entry is None:
            found[key] = [used, tuple(path), higher]
            order.append(key)
        elif used > entry[0]:  # type: ignore[operator]
            found[key] = [used, tuple(path), higher]

    def search(seq: tuple[int, ...], depth: int, top: int) -> None:
        die = seq[depth]
        moved = False
        sources = (24,) if me[24] else range(top, -1, -1)
        for s in sources:
            if not me[s]:
                continue
            t = s - die
            if t >= 0:
                o = 23 - t
                blockers = opp[o]
                if blockers >= 2:
                    continue
                me[s] -= 1
                me[t] += 1
                if blockers:
                    opp[o] = 0
                    opp[24] += 1
                path.append((s + 1, t + 1))
                if depth + 1 < len(seq):
                    search(seq, depth + 1, s if seq[0] == seq[-1] else 24)
                else:
                    record(depth + 1, die == hi)
                path.pop()
                if blockers:
                    opp[o] = 1
                    opp[24] -= 1
                me[t] -= 1
                me[s] += 1
                moved = True
            else:
                # Bearing off: everything home, and an overshoot only from the highest point.
                if s >= 6 or any(me[6:25]):
                    continue
                if t < -1 and any(me[s + 1 : 6]):
                    continue
                me[s] -= 1
                path.append((s + 1, 0))
                if depth + 1 < len(seq):
                    search(seq, depth + 1, s if seq[0] == seq[-1] else 24)
                else:
                    record(depth + 1, die == hi)
                path.pop()
                me[s] += 1
                moved = True
        if not moved and depth > 0:
            record(depth, seq[0] == hi)

    if hi == lo:
        search((hi, hi, hi, hi), 0, 24)
    else:
        search((hi, lo), 0, 24)
        search((lo, hi), 0, 24)
    if not found:
        return []
    most = max(e[0] for e in found.values())  # type: ignore[type-var]
    keep = [k for k in order if found[k][0] == most]
    if most == 1 and hi != lo and any(found[k][2] for k in keep):
        keep = [k for k in keep if found[k][2]]
    plays = []
    for key in keep:
        raw = key
        plays.append(
            Play(found[key][1], Position(tuple(raw[:25]), tuple(raw[25:])))  # type: ignore[arg-type]
        )
    return plays
