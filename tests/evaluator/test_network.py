"""The evaluator (issue 28, requirement 1): wildbg's input encoding ported exactly, the numpy
networks equal to the original ONNX ones, batches equal to single positions, finished games,
and plays ranked by the equity they leave."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine.movegen import legal_plays
from engine.position import Position
from evaluator.encoding import (
    CONTACT_INPUTS,
    RACE_INPUTS,
    contact_inputs,
    is_race,
    race_inputs,
    signed_counts,
)
from evaluator.evaluate import LOSE_BACKGAMMON, LOSE_GAMMON, WIN, Evaluator, equities, flipped

REFERENCE = Path(__file__).with_name("reference.json")


@pytest.fixture(scope="module")
def evaluator() -> Evaluator:
    return Evaluator()


def _side(points: dict[int, int], bar: int = 0) -> tuple[int, ...]:
    side = [0] * 25
    for point, count in points.items():
        side[point - 1] = count
    side[24] = bar
    return tuple(side)


def _td(*counts: int) -> list[float]:
    """wildbg's four inputs for each count of one's own checkers, one after the other."""
    table = ([0.0] * 4, [1.0, 0, 0, 0], [0.0, 1, 0, 0])
    return [x for n in counts for x in (table[n] if n < 3 else [0.0, 0, 1, n - 3])]


# wildbg's own test position (inputs.rs, contact_cvs_line): x 1:1, 2:2, 3:3, 4:4, 5:5; the
# opponent with one checker on x's 24 (their 1) and one on the bar.
MINE = _side({1: 1, 2: 2, 3: 3, 4: 4, 5: 5})
THEIRS = _side({1: 1}, bar=1)


def test_contact_inputs_are_wildbgs_for_its_own_test_position() -> None:
    got = contact_inputs(signed_counts([Position(MINE, THEIRS)]))[0]
    want = [0.0, 13.0, *_td(0)]  # x's off, the opponent's off, x's bar
    want += _td(1, 2, 3, 4, 5) + [0.0] * 4 * 19  # x's points 1..24
    want += _td(1) + [0.0] * 4 * 23 + _td(1)  # the opponent: bar, then x's points 1..24
    assert got.shape == (CONTACT_INPUTS,) and got.tolist() == want
    switched = contact_inputs(signed_counts([Position(THEIRS, MINE)]))[0]
    want = [13.0, 0.0, *_td(1, 1)] + [0.0] * 4 * 23  # bar, then the 1-point (x's 24)
    want += [0.0] * 4 + [0.0] * 4 * 19 + _td(5, 4, 3, 2, 1)
    assert switched.tolist() == want


def test_race_inputs_are_wildbgs_for_its_own_test_position() -> None:
    theirs = _side({1: 1})  # inputs.rs race_cvs_line: the same without the bar
    counts = signed_counts([Position(MINE, theirs)])
    assert bool(is_race(counts)[0]) is True  # their last checker (x's 24) is past all of x's
    got = race_inputs(counts)[0]
    want = [0.0, 14.0, *_td(1, 2, 3, 4, 5)] + [0.0] * 4 * 18
    want += [0.0] * 4 * 22 + _td(1)  # the opponent on x's points 2..24
    assert got.shape == (RACE_INPUTS,) and got.tolist() == want
    assert bool(is_race(signed_counts([Position.start()]))[0]) is False


def test_the_numpy_networks_match_the_original_onnx_ones(evaluator: Evaluator) -> None:
    rows = json.loads(REFERENCE.read_text())["positions"]
    positions = [Position.from_gnubg_id(r["id"]) for r in rows]
    assert {r["race"] for r in rows} == {False, True}
    assert is_race(signed_counts(positions)).tolist() == [r["race"] for r in rows]
    got = evaluator.probabilities(positions)
    want = np.array([r["probabilities"] for r in rows], dtype=np.float32)
    assert np.abs(got - want).max() < 1e-5
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-5)
    # One position at a time gives what the batch gave.
    for pos, row in zip(positions[::7], got[::7], strict=True):
        assert np.abs(evaluator.probabilities([pos])[0] - row).max() < 1e-6


def test_a_finished_game_is_its_result(evaluator: Evaluator) -> None:
    lost_single = Position(_side({1: 3}), _side({}))  # some of mine were off already
    lost_gammon = Position(_side({6: 15}), _side({}))
    lost_bg = Position(_side({6: 14}, bar=1), _side({}))
    won = Position(_side({}), _side({3: 4}))
    p = evaluator.probabilities([lost_single, lost_gammon, lost_bg])
    assert np.argmax(p, axis=1).tolist() == [WIN + 3, LOSE_GAMMON, LOSE_BACKGAMMON]
    assert equities(p).tolist() == [-1.0, -2.0, -3.0]
    assert equities(flipped(evaluator.probabilities([won.flip()]))).tolist() == [1.0]


def test_plays_are_ranked_by_the_equity_they_leave(evaluator: Evaluator) -> None:
    start = Position.start()
    ranked = evaluator.rank_plays(start, (3, 1))
    assert len(ranked) == len(legal_plays(start, (3, 1)))
    assert ranked[0].play.notation(start) == "8/5 6/5"  # the opening 3-1 every expert plays
    assert [r.equity for r in ranked] == sorted((r.equity for r in ranked), reverse=True)
    assert evaluator.rank_plays(start, (6, 5))[0].play.notation(start) == "24/13"
    again = Evaluator().rank_plays(start, (3, 1))
    assert [r.play.steps for r in again] == [r.play.steps for r in ranked]  # deterministic
    blocked = Position(_side({6: 14}, bar=1), _side({n: 2 for n in range(1, 7)}))
    assert evaluator.rank_plays(blocked, (6, 6)) == []
