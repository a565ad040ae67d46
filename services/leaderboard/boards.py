"""Board arithmetic from events: pure functions, no I/O (the store applies their results).

- Trophies (I-12, rated wagered tables): 10 per point of each game won, never multiplied by the
  cube (single, resign and drop 10, gammon 20, backgammon 30); the match winner adds
  10 x match length, unless every game they won ended with the other player resigning, or the
  match was won because the other player left or stayed away (no match-win trophies then).
- Leagues (I-13): a wagered match winner's net gain (payout less own final stake), per season.
- Scored points (I-18, I-19, I-31): the match's +1/-1 (or nothing) per player, one board per
  level; test games are recorded nowhere; computer seats are not ranked.
- Rating (I-26, casual ranked): FIBS. P_upset = 1 / (10^(D*sqrt(n)/2000) + 1), D the rating
  difference, n the match length; each player's change is 4*K*sqrt(n)*P, with
  K = max(1, 5 - experience/100) (experience: match points played before), P = P_upset when
  the favourite wins and 1 - P_upset when the underdog wins. Everyone starts at 1500.
- Seasons: calendar weeks from Monday 00:00 UTC (configurable length).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.vocabulary import EndReason, GameResult

START_RATING = 1500.0
TROPHIES_PER_POINT = 10
BASE_POINTS = {
    GameResult.SINGLE: 1,
    GameResult.RESIGN: 1,
    GameResult.DROP: 1,
    GameResult.GAMMON: 2,
    GameResult.BACKGAMMON: 3,
}
NO_MATCH_TROPHIES = {
    EndReason.LEFT,
    EndReason.AWAY,
    EndReason.MOVE_TIME,
    EndReason.DOUBLER_LEFT,
}
EPOCH_MONDAY_MS = 4 * 86_400_000  # 1970-01-05 00:00 UTC was a Monday
WEEK_MS = 7 * 86_400_000


def season_of(at_ms: int, length_ms: int = WEEK_MS, anchor_ms: int = EPOCH_MONDAY_MS) -> str:
    """The season an event belongs to, named by its first day (e.g. 2026-11-23)."""
    import datetime as dt

    start = anchor_ms + ((at_ms - anchor_ms) // length_ms) * length_ms
    return dt.datetime.fromtimestamp(start / 1000, tz=dt.UTC).strftime("%Y-%m-%d")


def game_trophies(result: GameResult) -> int:
    """Trophies for one game won (the cube never multiplies them)."""
    return TROPHIES_PER_POINT * BASE_POINTS[result]


def match_trophies(
    match_length: int, reason: EndReason, winner_game_results: list[GameResult]
) -> int:
    """The match winner's bonus: 10 x length, except resign-only or walk-over wins."""
    if reason in NO_MATCH_TROPHIES:
        return 0
    if winner_game_results and all(r == GameResult.RESIGN for r in winner_game_results):
        return 0
    return TROPHIES_PER_POINT * match_length


def upset_probability(diff: float, match_length: int) -> float:
    """FIBS: the chance that the lower-rated player wins a match of `match_length`."""
    return 1.0 / (10 ** (abs(diff) * math.sqrt(match_length) / 2000) + 1)


def k_factor(experience: int) -> float:
    return max(1.0, 5.0 - experience / 100)


@dataclass(frozen=True)
class RatingChange:
    winner: float
    loser: float


def fibs_change(
    winner_rating: float, loser_rating: float, match_length: int, winner_exp: int, loser_exp: int
) -> RatingChange:
    """Rating deltas (winner gains, loser loses) for one ranked match."""
    p_upset = upset_probability(winner_rating - loser_rating, match_length)
    p = p_upset if winner_rating >= loser_rating else 1 - p_upset
    base = 4 * math.sqrt(match_length) * p
    return RatingChange(winner=base * k_factor(winner_exp), loser=-base * k_factor(loser_exp))
