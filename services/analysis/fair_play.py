"""Fair play (issue 61, item 2): does a player let a program choose their checker plays?

The evidence is per decision, from the analysis: how far the best play stood above the second at
0-ply (the decision's difficulty: `gap`), what the judge charged the play made (`lost`), and how
long the player took (`think_ms`, from the roll to the play). Two things tell a program from a
person, and neither is the mean error rate (strong people play well; issue 61's measurements):

- **choice**: where the best play stands out (a `clear` decision) or is found only by looking
  (`close`), how often the play made is the best, near it, or a real error. A program's errors
  against this judge are the two programs' disagreements; a person's spread with the difficulty.
  `CHOICE_LR` is the ratio of the chances of each outcome for a program (a noisy search one roll
  deeper) and for the strongest honest player we protect (a softmax at
  `REFERENCE_TEMPERATURE` over our 0-ply equities seen with an error of 0.02), measured by
  `python -m benchmarks.bench_fair_play calibrate` on positions of its own. Weaker players err
  more and look less like a program: the strongest is the null hypothesis' least favourable
  member.
- **time**: a person thinks longer on close decisions than on clear ones; a program answers hard
  and easy alike. Within each match, a player's log think times are centred between the medians
  of their close and clear decisions and scaled by their spread; a person's close decisions sit
  `DELTA` scales above their clear ones (the least such gap we protect), a program's do not.

Each decision's likelihood ratio (choice x time) enters a mixture: a player assisted on a share
`ASSISTED_SHARE` of their decisions (the rest their own), so one error of their own does not
clear a player helped on half their moves: log((1 - share) + share * ratio). The test is Page's
CUSUM over the sum of those per match: S = max(0, S + match's sum), flagged when S >= `THRESHOLD`.
Under a simple null a CUSUM at h waits about e^h decisions for a false alarm; the threshold is
set, and its false positives per honest player over 100 matches measured, by the simulation
(`python -m benchmarks.bench_fair_play`, docs/fair-play.md). A cleared flag restarts S at 0: the
next flag needs new evidence.

Cube decisions are kept apart (their error rate is shown) and not tested: a match has a few.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Class = Literal["tie", "close", "clear"]
Outcome = Literal["best", "near", "off", "wrong"]

TIE_GAP, CLEAR_GAP = 0.01, 0.06  # 0-ply equity between the best and the second-best play
NEAR, OFF = 0.02, 0.06  # lost: "best" is 0; "near" < NEAR; "off" < OFF; "wrong" beyond
REFERENCE_TEMPERATURE = 0.008  # the strongest honest player's softmax (points), see above
DELTA = 1.0  # the least shift of a person's close decisions over their clear ones (in scales)
Z_CAP = 3.0  # a standardised time counts at most this far out (a phone call is not evidence)
MIN_TIMED = 3  # timed decisions of each class a match needs before its times count
ASSISTED_SHARE = 0.5
THRESHOLD = 22.0  # S at which a player is flagged (BG_FAIR_PLAY_THRESHOLD; docs/fair-play.md)

# P(outcome | program) / P(outcome | the strongest honest player), by class; calibrated.
CHOICE_LR: dict[Class, dict[Outcome, float]] = {
    "tie": {"best": 1.25, "near": 0.88, "off": 0.21, "wrong": 0.05},
    "close": {"best": 1.11, "near": 1.11, "off": 0.34, "wrong": 0.05},
    "clear": {"best": 0.98, "near": 0.98, "off": 0.98, "wrong": 0.19},
}


@dataclass(frozen=True)
class Evidence:
    """One checker play of one player, as the analysis judged it."""

    gap: float
    lost: float
    think_ms: int = 0  # 0: not known (a play the clock made is not a decision at all)


def kind_of(gap: float) -> Class:
    if gap < TIE_GAP:
        return "tie"
    return "clear" if gap >= CLEAR_GAP else "close"


def outcome_of(lost: float) -> Outcome:
    if lost <= 1e-9:
        return "best"
    if lost < NEAR:
        return "near"
    return "off" if lost < OFF else "wrong"


@dataclass(frozen=True)
class MatchEvidence:
    """One player's match, summed: what is kept per match and shown to a reviewer."""

    decisions: int
    close: int
    close_best: int
    clear: int
    clear_best: int
    choice: float  # the sum of log choice ratios
    timing: float  # the sum of log time ratios (0 when the match's times do not count)
    score: float  # the sum of the mixture's log ratios: what the CUSUM adds
    close_think_ms: int  # median think time of close decisions (0: none timed)
    clear_think_ms: int
    checker_lost: float = 0.0  # points, over the checker plays
    cube_decisions: int = 0  # kept apart: shown, not tested
    cube_lost: float = 0.0


DECISIONS = ("clear", "restrict", "ban")  # an operator's answers to a flag


def match_evidence(decisions: Sequence[Evidence], cube_lost: Sequence[float] = ()) -> MatchEvidence:
    kinds = [kind_of(d.gap) for d in decisions]
    choice = [
        math.log(CHOICE_LR[k][outcome_of(d.lost)]) for k, d in zip(kinds, decisions, strict=True)
    ]
    timing = _timing(decisions, kinds)
    score = sum(
        math.log((1 - ASSISTED_SHARE) + ASSISTED_SHARE * math.exp(c + t))
        for c, t in zip(choice, timing, strict=True)
    )
    best = [outcome_of(d.lost) == "best" for d in decisions]
    return MatchEvidence(
        decisions=len(decisions),
        close=kinds.count("close"),
        close_best=sum(b for k, b in zip(kinds, best, strict=True) if k == "close"),
        clear=kinds.count("clear"),
        clear_best=sum(b for k, b in zip(kinds, best, strict=True) if k == "clear"),
        choice=sum(choice),
        timing=sum(timing),
        score=score,
        close_think_ms=_median_ms(decisions, kinds, "close"),
        clear_think_ms=_median_ms(decisions, kinds, "clear"),
        checker_lost=sum(d.lost for d in decisions),
        cube_decisions=len(cube_lost),
        cube_lost=sum(cube_lost),
    )


def _timing(decisions: Sequence[Evidence], kinds: Sequence[Class]) -> list[float]:
    """Each decision's log time ratio (program / person), 0 where the match's times say nothing."""
    logs = {
        k: [
            math.log(d.think_ms)
            for d, kk in zip(decisions, kinds, strict=True)
            if kk == k and d.think_ms > 0
        ]
        for k in ("close", "clear")
    }
    if min(len(v) for v in logs.values()) < MIN_TIMED:
        return [0.0] * len(decisions)
    medians = {k: statistics.median(v) for k, v in logs.items()}
    centre = (medians["close"] + medians["clear"]) / 2
    spreads = [1.4826 * statistics.median(abs(x - medians[k]) for x in v) for k, v in logs.items()]
    scale = max(statistics.fmean(spreads), 0.05)
    out = []
    for d, k in zip(decisions, kinds, strict=True):
        if k == "tie" or d.think_ms <= 0:
            out.append(0.0)
            continue
        z = max(-Z_CAP, min(Z_CAP, (math.log(d.think_ms) - centre) / scale))
        sign = 1.0 if k == "close" else -1.0
        out.append(DELTA * DELTA / 8 - sign * z * DELTA / 2)
    return out


def _median_ms(decisions: Sequence[Evidence], kinds: Sequence[Class], kind: Class) -> int:
    times = [
        d.think_ms for d, k in zip(decisions, kinds, strict=True) if k == kind and d.think_ms > 0
    ]
    return int(statistics.median(times)) if times else 0


def cusum(before: float, match: MatchEvidence) -> float:
    """Page's statistic after one more match (never below 0: old innocence does not bank)."""
    return max(0.0, before + match.score)


def flagged(statistic: float, threshold: float = THRESHOLD) -> bool:
    return statistic >= threshold
