"""The computer levels on the evaluator (issue 28): `expert` far stronger than engine.bots'
old `normal` with the same dice, each level's error per decision in its order as GNU Backgammon
(the test-only oracle) judges it at 2-ply, choices fixed by the seat's seed and made from the
board and the dice alone (I-31), and a cube from the evaluator's equity."""

from __future__ import annotations

import inspect
import random
import statistics

from benchmarks.bench_strength import decisions, judge
from engine import bots
from engine.position import Position
from evaluator.bots import STRATEGIES, expert_bot, normal_bot, seat
from tests.engine.test_bots import _game


def _duplicate_rate(first: bots.Strategy, second: bots.Strategy, pairs: int) -> float:
    wins = 0
    for g in range(pairs):
        # The same dice for both games of a pair: the seats swap, the luck does not.
        wins += _game(first, second, random.Random(g)) == 0
        wins += _game(second, first, random.Random(g)) == 1
    return wins / (2 * pairs)


def test_expert_beats_the_old_normal_clearly_with_the_same_dice() -> None:
    rate = _duplicate_rate(expert_bot, bots.normal_bot, pairs=12)
    print(f"expert vs old normal, 24 games with duplicate dice: {rate:.1%}")
    assert rate >= 0.65


def test_the_levels_errors_come_in_their_order_as_gnubg_judges_them() -> None:
    items = decisions(60, seed=5)
    chosen = {}
    for name, choose in STRATEGIES.items():
        rng = random.Random(3)
        plays = [choose(pos, dice, rng) for pos, dice in items]
        chosen[name] = [p.result for p in plays if p is not None]
    lost = {name: statistics.fmean(v) for name, v in judge(items, chosen).items()}
    print(lost)
    assert lost["expert"] < lost["normal"] < lost["easy"]
    assert lost["expert"] < 10


def test_a_level_sees_only_the_board_and_the_dice_and_its_seed_fixes_its_choices() -> None:
    start = Position.start()
    for choose in STRATEGIES.values():
        assert list(inspect.signature(choose).parameters) == ["pos", "dice", "rng"]
    plays = [expert_bot(start, (4, 2), random.Random(seed)) for seed in range(5)]
    assert {p.steps for p in plays if p} == {((8, 4), (6, 4))} and all(plays)

    def noisy_game(seed: int) -> list[object]:
        rng = random.Random(seed)
        return [normal_bot(start, (a, b), rng) for a in range(1, 7) for b in range(1, 7)]

    assert noisy_game(9) == noisy_game(9)
    assert seat("expert")[0] is expert_bot and seat("unknown")[0] is normal_bot
