"""Bots: `random`, `easy` and `normal`. A bot sees only what a player sees.

Each bot chooses among the legal plays of the position from its own side with the dice it was
shown; it never receives the seed, the dice cursor or anything from the server-only state
(I-26, I-31). Randomness comes in as a `random.Random` the caller owns.

`normal` scores each legal play's result with a hand-tuned linear evaluation of race and contact
features (pip lead, blots and the direct/indirect shots at them, made home and prime points,
anchors, checkers back, borne-off checkers) and plays the best. `easy` looks only at pips and
blots, with noise. `random` picks uniformly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from engine.movegen import Play, legal_plays
from engine.position import Position, pip_count

Strategy = Callable[[Position, tuple[int, int], random.Random], Play | None]

# Shots at a blot `d` points away: how many of the 36 rolls hit it directly or with a combination
# (ignoring blocks; a standard approximation).
_SHOTS = {
    1: 11, 2: 12, 3: 14, 4: 15, 5: 15, 6: 17, 7: 6, 8: 6, 9: 5, 10: 3, 11: 2, 12: 3,
    15: 1, 16: 1, 18: 1, 20: 1, 24: 1,
}  # fmt: skip


def _contact(pos: Position) -> bool:
    """Can the sides still hit each other? (Some mover checker behind an opponent checker.)"""
    me, opp = pos.mover, pos.opponent
    my_back = 25 if me[24] else max((i + 1 for i in range(24) if me[i]), default=0)
    # Opponent checker on its point q sits on my point 25 - q.
    opp_front = min((25 - (i + 1) for i in range(24) if opp[i]), default=25)
    if opp[24]:
        opp_front = 0
    return my_back > opp_front


def _blot_risk(pos: Position) -> float:
    """Expected shots (out of 36) at the mover's blots, from the opponent's checkers."""
    me, opp = pos.mover, pos.opponent
    opp_points = [25 - (i + 1) for i in range(24) if opp[i]]  # on my numbering
    if opp[24]:
        opp_points.append(0)  # the bar enters on my points 19..24 (as if from my 0-point)
    risk = 0.0
    for i in range(24):
        if me[i] == 1:
            p = i + 1
            # an opponent checker at my point q < p moves upward (towards my 24) to hit p
            shots = sum(_SHOTS.get(p - q, 0) for q in opp_points if q < p)
            weight = 1.0 + (p / 24.0)  # a hit far up the board costs more pips
            risk += min(shots, 36) / 36.0 * weight
    return risk


def evaluate_normal(pos: Position) -> float:
    """Higher is better for the mover after its play (the opponent rolls next)."""
    me, opp = pos.mover, pos.opponent
    my_pips, opp_pips = pip_count(me), pip_count(opp)
    score = (opp_pips - my_pips) * 1.0
    score += (15 - sum(me)) * 4.0 - (15 - sum(opp)) * 4.0
    if not _contact(pos):
        # Pure race: pips and bearing off, with a little weight on not wasting checkers.
        return score + sum(me[:6]) * 0.5
    score -= _blot_risk(pos) * 18.0
    made = [me[i] >= 2 for i in range(24)]
    score += sum(6.0 + i * 0.5 for i in range(6) if made[i])  # home board points
    score += 3.0 if made[6] else 0.0  # bar point
    run = best = 0
    for i in range(12):
        run = run + 1 if made[i] else 0
        best = max(best, run)
    score += best * best * 1.5  # primes
    score += 4.0 * sum(1 for i in range(18, 24) if me[i] >= 2)  # anchors
    score -= 2.0 * sum(me[18:24]) if opp_pips < my_pips else 0.0  # stragglers when behind
    score += opp[24] * 10.0  # opponent on the bar
    score -= me[24] * 10.0
    score -= sum(max(0, n - 3) for n in me[:24]) * 1.5  # stacking
    return score


def evaluate_easy(pos: Position) -> float:
    me, opp = pos.mover, pos.opponent
    blots = sum(1 for i in range(24) if me[i] == 1)
    return (pip_count(opp) - pip_count(me)) - blots * 6.0 + opp[24] * 8.0


def random_bot(pos: Position, dice: tuple[int, int], rng: random.Random) -> Play | None:
    plays = legal_plays(pos, dice)
    return rng.choice(plays) if plays else None


def _best(
    evaluate: Callable[[Position], float], noise: float
) -> Callable[[Position, tuple[int, int], random.Random], Play | None]:
    def choose(pos: Position, dice: tuple[int, int], rng: random.Random) -> Play | None:
        plays = legal_plays(pos, dice)
        if not plays:
            return None
        return max(
            plays,
            key=lambda p: evaluate(p.result) + rng.gauss(0, noise) if noise else evaluate(p.result),
        )

    return choose


easy_bot = _best(evaluate_easy, noise=6.0)
normal_bot = _best(evaluate_normal, noise=0.0)

STRATEGIES: dict[str, Strategy] = {"random": random_bot, "easy": easy_bot, "normal": normal_bot}


@dataclass(frozen=True)
class CubeAdvice:
    double: bool
    take: bool


@dataclass(frozen=True)
class MatchScore:
    """The score as the cube sees it, from the doubler's side: points each still needs, the
    cube's value now, and whether a 1-away player's Crawford game is behind."""

    me_away: int = 1
    them_away: int = 1
    cube: int = 1
    crawford_done: bool = False


def race_winning_chance(pos: Position) -> float:
    """A rough chance for the mover to win, from the pip counts (Keith-like race estimate)."""
    my_pips, opp_pips = pip_count(pos.mover), pip_count(pos.opponent)
    lead = (opp_pips - my_pips + 4) / max(my_pips, 1)  # the mover's roll is worth ~4 pips
    return max(0.02, min(0.98, 0.5 + lead * 2.2))


def cube_advice(pos: Position, score: MatchScore | None = None) -> CubeAdvice:
    """From the doubler's side (on roll): double at about 70%; the opponent takes with 25%."""
    p = race_winning_chance(pos)
    return CubeAdvice(double=p >= 0.70, take=(1 - p) >= 0.25)


def play_game(
    first: Strategy,
    second: Strategy,
    dice: random.Random,
    on_turn: Callable[[int, tuple[int, int], Play | None], None] | None = None,
) -> int:
    """One cubeless game from the start between two strategies, the dice drawn from `dice`
    (the same `dice` seed gives the same rolls whoever plays): the points for `first` (1, 2 for
    a gammon, 3 for a backgammon; negative when `second` won). `on_turn(seat, roll, play)` sees
    each turn (seat 0 is `first`)."""
    pos = Position.start()
    strategies = (first, second)
    roll = (0, 0)
    while roll[0] == roll[1]:
        roll = (dice.randint(1, 6), dice.randint(1, 6))
    mover = 0 if roll[0] > roll[1] else 1
    choices = random.Random(7)  # the strategies' own randomness, apart from the dice
    while True:
        play = strategies[mover](pos, roll, choices)
        if on_turn is not None:
            on_turn(mover, roll, play)
        if play is not None:
            pos = play.result
        if pos.mover_off == 15:
            points = 1
            if pos.opponent_off == 0:
                points = 3 if any(pos.opponent[18:25]) else 2
            return points if mover == 0 else -points
        pos, mover = pos.flip(), 1 - mover
        roll = (dice.randint(1, 6), dice.randint(1, 6))
