"""Game results per profile and match ends (RULES.md 'gammon / backgammon' row; I-15, I-22)."""

from __future__ import annotations

import pytest

from engine import commands as c
from engine import events as e
from engine import profiles
from engine.profiles import RulesOptions
from engine.state import Phase
from engine.view import player_view, spectator_view
from tests.engine.scenario import ok, side, spot


def _bear_off_last(
    options: RulesOptions, loser: tuple[int, ...], score: tuple[int, int] = (0, 0)
) -> e.GameEnded:
    st = spot(options, (side({1: 1}), loser), dice=(2, 1), phase=Phase.MOVING, score=score)
    out = ok(st, c.Move(0, 1, 0), 10)
    while out.state.match.phase in (Phase.MOVING, Phase.CONFIRMING):
        out = ok(out.state, c.Confirm(0), 20)
    return next(ev for ev in out.events if isinstance(ev, e.GameEnded))


SINGLE = side({1: 14})  # one borne off
GAMMON = side({1: 15})  # none borne off, none in the winner's home board
BACKGAMMON_HOME = side({1: 14, 20: 1})  # a checker on the loser's 20 = the winner's 5
BACKGAMMON_BAR = side({1: 14}, bar=1)


@pytest.mark.parametrize(
    ("options", "loser", "result", "points"),
    [
        (profiles.wagered(3, 100), SINGLE, "single", 1),
        (profiles.wagered(3, 100), GAMMON, "gammon", 2),
        (profiles.wagered(3, 100), BACKGAMMON_HOME, "backgammon", 3),
        (profiles.wagered(3, 100), BACKGAMMON_BAR, "backgammon", 3),
        (profiles.scored(3), GAMMON, "gammon", 2),
        (profiles.scored(3), BACKGAMMON_HOME, "gammon", 2),  # I-15: no backgammon
        (profiles.casual(5), BACKGAMMON_BAR, "backgammon", 3),
        (profiles.casual(5, gammons=False), BACKGAMMON_BAR, "single", 1),  # I-22 off: all 1
        (profiles.casual(5, gammons=False), GAMMON, "single", 1),
    ],
)
def test_result_kinds_per_profile(
    options: RulesOptions, loser: tuple[int, ...], result: str, points: int
) -> None:
    ended = _bear_off_last(options, loser)
    assert (ended.winner, ended.result, ended.points) == (0, result, points)


def test_casual_cube_multiplies_gammons() -> None:
    opts = profiles.casual(5, cube=True)
    st = spot(opts, (side({1: 1}), GAMMON), dice=(2, 1), phase=Phase.MOVING, cube=4, cube_owner=1)
    ended = next(ev for ev in ok(st, c.Move(0, 1, 0), 10).events if isinstance(ev, e.GameEnded))
    assert (ended.points, ended.cube) == (8, 4)


def test_match_ends_when_the_winner_reaches_the_length() -> None:
    st = spot(
        profiles.wagered(3, 100),
        (side({1: 1}), GAMMON),
        dice=(2, 1),
        phase=Phase.MOVING,
        score=(1, 2),
    )
    out = ok(ok(st, c.Move(0, 1, 0), 10).state, c.Confirm(0), 20)
    ended = next(ev for ev in out.events if isinstance(ev, e.MatchEnded))
    assert (ended.winner, ended.reason, ended.score) == (0, "points", (3, 2))
    assert out.state.match.phase is Phase.MATCH_OVER
    assert ended.seed_hex == out.state.secret.seed.hex()  # I-27: revealed at the end
    # Issue 60, item 9: both views (and a spectator's) say the last game was a gammon, so an
    # end panel says it without having seen the game's events.
    views = [player_view(out.state.match, seat) for seat in (0, 1)]
    views.append(spectator_view(out.state.match))
    assert [v.last_result for v in views] == ["gammon"] * 3
    assert player_view(st.match, 0).last_result is None  # no game over yet


def test_scored_match_points_are_plus_one_minus_one() -> None:
    st = spot(profiles.scored(1), (side({1: 1}), SINGLE), dice=(2, 1), phase=Phase.MOVING)
    out = ok(ok(st, c.Move(0, 1, 0), 10).state, c.Confirm(0), 20)
    ended = next(ev for ev in out.events if isinstance(ev, e.MatchEnded))
    assert ended.scored_points == (1, -1)
