"""The fair-play test's core (issue 61, item 2; services/analysis/fair_play.py): what counts as
a program's evidence and what as a person's, and the simulation's short run (benchmarks/
bench_fair_play.py) on a small pool: every fully assisted player flagged within 20 matches, no
honest player of the typical range over 50."""

from __future__ import annotations

import math
import random

import pytest

from services.analysis import fair_play
from services.analysis.fair_play import Evidence, match_evidence

CLOSE, CLEAR, TIE = 0.03, 0.2, 0.002


def test_the_classes_and_outcomes_follow_the_gap_and_the_loss() -> None:
    assert [fair_play.kind_of(g) for g in (TIE, CLOSE, CLEAR)] == ["tie", "close", "clear"]
    assert [fair_play.outcome_of(x) for x in (0.0, 0.01, 0.05, 0.2)] == [
        "best", "near", "off", "wrong",
    ]  # fmt: skip
    for row in fair_play.CHOICE_LR.values():  # a bigger loss is never more a program's
        values = list(row.values())
        assert values == sorted(values, reverse=True)


def test_a_person_who_thinks_longer_on_close_decisions_gives_timing_evidence_against() -> None:
    person = [Evidence(CLOSE, 0.0, 9000)] * 5 + [Evidence(CLEAR, 0.0, 3000)] * 5
    program = [Evidence(CLOSE, 0.0, 5000)] * 5 + [Evidence(CLEAR, 0.0, 5000)] * 5
    assert match_evidence(person).timing < 0 < match_evidence(program).timing
    # Too few timed decisions of a class: the times say nothing.
    few = [Evidence(CLOSE, 0.0, 5000)] * 2 + [Evidence(CLEAR, 0.0, 5000)] * 8
    assert match_evidence(few).timing == 0.0
    untimed = [Evidence(CLOSE, 0.0, 0)] * 5 + [Evidence(CLEAR, 0.0, 0)] * 5
    assert match_evidence(untimed).timing == 0.0


def test_one_error_of_their_own_costs_a_half_assisted_player_a_bounded_amount() -> None:
    clean = match_evidence([Evidence(CLOSE, 0.0)] * 10)
    blunder = match_evidence([Evidence(CLOSE, 0.0)] * 9 + [Evidence(CLEAR, 0.5)])
    assert clean.score > 0
    # The mixture: one decision's log ratio is never below log(1 - share).
    assert clean.score - blunder.score <= fair_play.CHOICE_LR["close"]["best"] - math.log(
        1 - fair_play.ASSISTED_SHARE
    )
    assert blunder.choice < clean.choice
    assert (blunder.clear, blunder.clear_best, clean.close_best) == (1, 0, 10)


def test_the_cusum_never_banks_innocence_and_flags_at_the_threshold() -> None:
    against = match_evidence([Evidence(CLEAR, 0.3)] * 10)
    assert fair_play.cusum(5.0, against) == 0.0
    assert not fair_play.flagged(fair_play.THRESHOLD - 0.01)
    assert fair_play.flagged(fair_play.THRESHOLD)


def test_cube_decisions_are_kept_apart() -> None:
    found = match_evidence([Evidence(CLEAR, 0.0)], cube_lost=[0.1, 0.0])
    assert (found.cube_decisions, found.decisions) == (2, 1)
    assert found.cube_lost == pytest.approx(0.1)


@pytest.mark.integration
def test_the_simulation_flags_assisted_players_and_spares_honest_ones() -> None:
    """Item 3's short run: GNU Backgammon 2-ply (a program other than the judge's) assisting on
    every decision; honest players of the typical range (not the strongest, whose rate the
    benchmark reports)."""
    from benchmarks.bench_fair_play import Player, flagged_after, honest_population, pool

    decisions = pool(150, seed=7)
    rng = random.Random(7)
    honest = [p for p in honest_population(40, rng) if p.temperature > 0.02]
    assert all(flagged_after(p, decisions, 50, rng) is None for p in honest)
    cheats = [Player("full", p.temperature, p.base_ms, p.delta) for p in honest[:20]]
    found = [flagged_after(p, decisions, 20, rng) for p in cheats]
    assert all(f is not None and f <= 20 for f in found), found
