"""Bots: strength figures over 200 seeded games, and they see only what a player sees."""

from __future__ import annotations

import inspect
import random

from engine import bots
from engine.position import Position


def _game(first: bots.Strategy, second: bots.Strategy, rng: random.Random) -> int:
    """The seat that won (0: `first`)."""
    return 0 if bots.play_game(first, second, rng) > 0 else 1


def _win_rate(a: str, b: str, games: int = 200) -> float:
    rng = random.Random(20261129)
    wins = 0
    for g in range(games):
        sa, sb = bots.STRATEGIES[a], bots.STRATEGIES[b]
        if g % 2 == 0:
            wins += _game(sa, sb, rng) == 0
        else:
            wins += _game(sb, sa, rng) == 1
    return wins / games


def test_normal_beats_random_in_at_least_80_percent() -> None:
    rate = _win_rate("normal", "random")
    print(f"normal vs random: {rate:.1%}")
    assert rate >= 0.80


def test_normal_beats_easy_in_a_clear_majority() -> None:
    rate = _win_rate("normal", "easy")
    print(f"normal vs easy: {rate:.1%}")
    assert rate >= 0.60


def test_a_bot_is_given_only_the_board_and_its_dice() -> None:
    """I-26/I-31: no seed, no state, no future dice can reach a bot."""
    for strategy in bots.STRATEGIES.values():
        params = list(inspect.signature(strategy).parameters)
        assert params == ["pos", "dice", "rng"]


def test_cube_advice_from_the_race() -> None:
    ahead = Position((0,) * 5 + (2,) + (0,) * 19, (0,) * 5 + (15,) + (0,) * 19)
    assert bots.cube_advice(ahead) == bots.CubeAdvice(double=True, take=False)
    assert bots.cube_advice(Position.start()) == bots.CubeAdvice(double=False, take=True)
