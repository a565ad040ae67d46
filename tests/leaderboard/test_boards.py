"""Board arithmetic: trophies (I-12), FIBS rating (I-26) against hand-computed values, seasons."""

from __future__ import annotations

import pytest

from engine.vocabulary import EndReason, GameResult
from services.leaderboard import boards

MONDAY = 1_795_392_000_000  # 2026-11-23 00:00 UTC, a Monday


def test_i12_game_trophies_are_never_multiplied_by_the_cube() -> None:
    results = ("single", "gammon", "backgammon", "resign", "drop")
    assert [boards.game_trophies(GameResult(r)) for r in results] == [10, 20, 30, 10, 10]


@pytest.mark.parametrize(
    ("reason", "won", "bonus"),
    [
        ("points", ["single", "gammon"], 50),
        ("points", ["resign", "resign"], 0),  # every game won by the other resigning
        ("points", ["resign", "single"], 50),
        ("left", ["single"], 0),  # the other player left
        ("away", [], 0),  # or stayed away
        ("doubler_left", ["drop"], 0),
    ],
)
def test_i12_match_win_trophies(reason: str, won: list[str], bonus: int) -> None:
    assert boards.match_trophies(5, EndReason(reason), [GameResult(r) for r in won]) == bonus


def test_fibs_even_players_one_point_match() -> None:
    """D = 0: P_upset = 1/2; 4 x K(0)=5 x sqrt(1) x 1/2 = 10 each way."""
    change = boards.fibs_change(1500, 1500, 1, 0, 0)
    assert change.winner == pytest.approx(10.0) and change.loser == pytest.approx(-10.0)


def test_fibs_favourite_and_underdog_wins() -> None:
    """D = 100, n = 5: P_upset = 1/(10^(100*sqrt(5)/2000)+1) = 0.435994."""
    assert boards.upset_probability(100, 5) == pytest.approx(0.435994, abs=1e-6)
    fav = boards.fibs_change(1600, 1500, 5, 100, 600)  # K: 4 and 1 (floored)
    assert fav.winner == pytest.approx(4 * 3.899648, abs=1e-5) and fav.loser == pytest.approx(
        -3.899648, abs=1e-5
    )
    dog = boards.fibs_change(1500, 1600, 5, 0, 0)  # the underdog wins: P = 1 - P_upset
    assert dog.winner == pytest.approx(5 * 5.044624, abs=1e-5) and dog.loser == pytest.approx(
        -5 * 5.044624, abs=1e-5
    )


def test_k_factor() -> None:
    assert [boards.k_factor(x) for x in (0, 150, 400, 1000)] == [5.0, 3.5, 1.0, 1.0]


def test_i13_seasons_are_calendar_weeks_from_monday_utc() -> None:
    assert boards.season_of(MONDAY) == "2026-11-23"
    assert boards.season_of(MONDAY - 1) == "2026-11-16"  # Sunday 23:59:59.999
    assert boards.season_of(MONDAY + 7 * 86_400_000 - 1) == "2026-11-23"
    assert boards.season_of(MONDAY + 7 * 86_400_000) == "2026-11-30"
    assert boards.season_of(MONDAY, length_ms=86_400_000) == "2026-11-23"  # configurable
