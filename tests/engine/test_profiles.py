"""Rules profiles: data, validated on construction, with errors naming the option."""

from __future__ import annotations

import pytest

from engine import profiles
from engine.profiles import OptionsError, RulesOptions


def test_profiles_carry_their_rules() -> None:
    w = profiles.wagered(1, 1000)
    assert (w.cube, w.turn_clock_ms, w.grace_ms, w.boosts_per_game, w.bet) == (
        True,
        45_000,
        1_500,
        2,
        1000,
    )
    s = profiles.scored(3, move_time_s=120)
    assert (s.cube, s.backgammons, s.move_time_ms, s.turn_end, s.disconnect_ms) == (
        False,
        False,
        120_000,
        "confirm_window",
        180_000,
    )
    c = profiles.casual()
    assert (c.match_length, c.gammons, c.cube, c.crawford, c.auto_roll_after_ms) == (
        1,
        True,
        False,
        True,
        25_000,
    )


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: profiles.wagered(2, 100), "match_length"),
        (lambda: profiles.wagered(1, 150), "bet"),
        (lambda: profiles.wagered(1, 2100), "bet"),
        (lambda: profiles.scored(1, move_time_s=20), "move_time_s"),
        (lambda: profiles.scored(1, move_time_s=601), "move_time_s"),
        (lambda: profiles.casual(cube=True, cube_max=48), "cube_max"),
        (lambda: RulesOptions(profile="wagered", match_length=3, cube=True, bet=100), "cube"),
        (lambda: RulesOptions(profile="scored", cube=True), "cube"),
        (lambda: RulesOptions(profile="casual", bet=100), "bet"),
        (lambda: RulesOptions(profile="poker"), "profile"),  # type: ignore[arg-type]
        (lambda: RulesOptions(profile="casual", turn_clock_ms=-1), "turn_clock_ms"),
        (lambda: RulesOptions(profile="wagered", cube=True, bet=100, level="easy"), "level"),
        (lambda: profiles.for_profile("casual", colour="red"), "options"),
    ],
)
def test_impossible_options_name_the_field(build, field: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(OptionsError) as err:
        build()
    assert err.value.field == field


def test_options_are_frozen() -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        profiles.casual().cube = True  # type: ignore[misc]


def test_scaled_keeps_rules_and_scales_time() -> None:
    w = profiles.wagered(3, 100).scaled(0.1)
    assert (w.turn_clock_ms, w.boost_ms, w.async_expiry_ms, w.bet) == (4500, 1000, 388_800_000, 100)
    with pytest.raises(OptionsError):
        w.scaled(0)
