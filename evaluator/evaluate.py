"""Probabilities and cubeless equities of positions, and the plays of a roll ranked by them
(0-ply: each play's resulting position evaluated for the opponent, who is then on roll).

All candidate positions of a decision go through the networks in one batch (one matrix product
per layer for the contact positions, one for the race ones)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from engine.movegen import Play, legal_plays
from engine.position import BAR, CHECKERS, Position
from evaluator.encoding import contact_inputs, is_race, race_inputs, signed_counts
from evaluator.network import Network

WEIGHTS = Path(__file__).with_name("weights")
# Columns of a probabilities row: exclusive results for the player on roll.
WIN, WIN_GAMMON, WIN_BACKGAMMON, LOSE, LOSE_GAMMON, LOSE_BACKGAMMON = range(6)
_POINTS = np.array([1, 2, 3, -1, -2, -3], dtype=np.float32)
# The 21 distinct rolls and how many of the 36 each stands for.
ROLLS = tuple(((a, b), 1 if a == b else 2) for a in range(1, 7) for b in range(a, 7))


def equities(probabilities: np.ndarray) -> np.ndarray:
    """(N, 6) -> (N,) cubeless equity for the player on roll, in points (-3..3)."""
    out: np.ndarray = probabilities @ _POINTS
    return out


def flipped(probabilities: np.ndarray) -> np.ndarray:
    """The same results seen from the other player."""
    return probabilities[..., [3, 4, 5, 0, 1, 2]]


@dataclass(frozen=True, slots=True)
class RankedPlay:
    play: Play
    probabilities: np.ndarray  # (6,) for the player who made the play
    equity: float


class Evaluator:
    def __init__(self, weights: Path = WEIGHTS) -> None:
        # One BLAS thread: a decision's matrices are small, and OpenBLAS' extra threads spin
        # while they wait, costing 3-4x the CPU of one thread per decision (bench_bots).
        threadpool_limits(limits=1, user_api="blas")
        self.contact = Network(weights / "contact.npz")
        self.race = Network(weights / "race.npz")

    def probabilities(self, positions: Sequence[Position]) -> np.ndarray:
        """(N, 6) float32 for each position's player on roll."""
        out = np.zeros((len(positions), 6), dtype=np.float32)
        if not positions:
            return out
        counts = signed_counts(positions)
        # A finished game is its result; only those few positions are looked at one by one.
        over = ((counts > 0).sum(axis=1) == 0) | ((counts < 0).sum(axis=1) == 0)
        for i in np.flatnonzero(over):
            out[i, _game_over(positions[int(i)])] = 1.0
        race = is_race(counts) & ~over
        contact = ~race & ~over
        if contact.any():
            out[contact] = self.contact(contact_inputs(counts[contact]))
        if race.any():
            out[race] = self.race(race_inputs(counts[race]))
        return out

    def rank_plays(self, position: Position, dice: tuple[int, int]) -> list[RankedPlay]:
        """The legal plays of `dice`, best first by cubeless equity for the player on roll (an
        empty list when nothing can move)."""
        plays = legal_plays(position, dice)
        if not plays:
            return []
        after = [play.result.flip() for play in plays]  # the opponent on roll
        mine = flipped(self.probabilities(after))
        values = equities(mine)
        order = np.argsort(-values, kind="stable")
        return [RankedPlay(plays[i], mine[i], float(values[i])) for i in order]

    def rank_plays_1ply(
        self, position: Position, dice: tuple[int, int], keep: int = 3, window: float = 0.1
    ) -> list[RankedPlay]:
        """As rank_plays, with the best `keep` plays within `window` of the best at 0-ply looked
        at again one roll deeper: each of the opponent's 21 rolls answered by their best play at
        0-ply, the results averaged (the rest keep their 0-ply order after them). A play looked
        at again has its chances from that same look (the averaged results of the answers), so
        its equity is its chances' equity."""
        ranked = self.rank_plays(position, dice)
        top = [r for r in ranked[:keep] if ranked[0].equity - r.equity <= window]
        if len(top) < 2:
            return ranked
        return self.one_roll_deeper(top) + ranked[len(top) :]

    def judge_plays(
        self,
        position: Position,
        dice: tuple[int, int],
        played: Position,
        keep: int = 1,
        window: float = 0.1,
    ) -> tuple[list[RankedPlay], RankedPlay | None]:
        """The plays a judge compares, all at one depth: 0-ply names the rivals (its best
        `keep` within `window`), then those and the play that was made (the result `played`) are
        looked at one roll deeper together, best first. Every equity compared comes from the same
        look, so a play is never charged against a rival seen one roll deeper than itself (issue
        61). One rival by default: the best of several noisy deeper looks is biased up (the
        winner's curse), and charged gnubg's best plays twice as often (benchmarks/bench_judge.py).
        The plays and the made one among them (None when `played` is no legal result)."""
        return self.judge_ranked(self.rank_plays(position, dice), played, keep, window)

    def judge_ranked(
        self, ranked: list[RankedPlay], played: Position, keep: int = 1, window: float = 0.1
    ) -> tuple[list[RankedPlay], RankedPlay | None]:
        """judge_plays on a 0-ply ranking the caller already has (`rank_plays`)."""
        made = next((r for r in ranked if r.play.result == played), None)
        if made is None:
            return ranked, None
        top = [r for r in ranked[:keep] if ranked[0].equity - r.equity <= window]
        looked = top + ([made] if all(r.play.result != played for r in top) else [])
        if len({r.play.result for r in looked}) < 2:
            return looked, made  # the made play is 0-ply's clear best: nothing to compare
        deeper = self.one_roll_deeper(looked)
        return deeper, next(r for r in deeper if r.play.result == played)

    def one_roll_deeper(self, candidates: Sequence[RankedPlay]) -> list[RankedPlay]:
        """`candidates` evaluated one roll deeper, best first: each of the opponent's 21 rolls
        answered by their best play at 0-ply, the results averaged (one batch for them all)."""
        batch: list[Position] = []
        spans: list[tuple[int, int, int]] = []  # (candidate, first, end) per roll, weight below
        weights: list[int] = []
        for c, candidate in enumerate(candidates):
            theirs = candidate.play.result.flip()  # the opponent on roll
            for roll, weight in ROLLS:
                answers = legal_plays(theirs, roll)
                first = len(batch)
                # After each answer the player of `candidate` is on roll again.
                batch += [a.result.flip() for a in answers] or [candidate.play.result]
                spans.append((c, first, len(batch)))
                weights.append(weight)
        chances = self.probabilities(batch)
        values = equities(chances)
        deeper = np.zeros((len(candidates), 6), dtype=np.float64)
        for (c, first, end), weight in zip(spans, weights, strict=True):
            answer = first + int(values[first:end].argmin())  # the opponent's best answer
            deeper[c] += weight * chances[answer]
        deeper /= 36
        deeper_equity = deeper @ _POINTS.astype(np.float64)
        order = np.argsort(-deeper_equity, kind="stable")
        return [
            RankedPlay(candidates[i].play, deeper[i].astype(np.float32), float(deeper_equity[i]))
            for i in order
        ]


def _game_over(pos: Position) -> int:
    """The result column of a finished game (one side has no checker left) for the player on
    roll."""
    mine, theirs = sum(pos.mover), sum(pos.opponent)
    if not theirs:  # the opponent bore off their last checker: the player on roll lost
        if mine < CHECKERS:
            return LOSE
        behind = any(pos.mover[18 : BAR + 1])  # still on the bar or in the winner's home board
        return LOSE_BACKGAMMON if behind else LOSE_GAMMON
    if theirs < CHECKERS:
        return WIN
    return WIN_BACKGAMMON if any(pos.opponent[18 : BAR + 1]) else WIN_GAMMON


@cache
def default() -> Evaluator:
    """The process's evaluator (its weights read once, when first asked for)."""
    return Evaluator()
