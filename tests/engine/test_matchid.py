"""GNU Backgammon match IDs (RULES.md 'Interop conventions')."""

from __future__ import annotations

import random

import pytest

from engine.matchid import GameState, MatchKey
from tests.engine.gnubg_oracle import gnubg_module


def test_match_ids_agree_with_gnubg() -> None:
    g = gnubg_module()
    rng = random.Random(3)
    for _ in range(300):
        ml = rng.choice([0, 1, 3, 5, 7, 9])
        key = MatchKey(
            cube=1 << rng.randint(0, 6),
            cube_owner=rng.choice([-1, 0, 1]),
            dice_owner=rng.randint(0, 1),
            crawford=bool(rng.randint(0, 1)) if ml else False,
            game_state=GameState(rng.randint(0, 4)),
            turn=rng.randint(0, 1),
            double_offered=bool(rng.randint(0, 1)),
            resigned=rng.randint(0, 3),
            dice=(rng.randint(1, 6), rng.randint(1, 6)),
            match_length=ml,
            score=(rng.randint(0, max(ml - 1, 0)), rng.randint(0, max(ml - 1, 0))),
            jacoby=ml == 0,
        )
        theirs = g.matchid(
            g.cubeinfo(key.cube, key.cube_owner, key.dice_owner, ml, key.score, int(key.crawford)),
            g.posinfo(
                key.turn, key.resigned, int(key.double_offered), int(key.game_state), key.dice
            ),
        )
        assert key.match_id() == theirs
        back = MatchKey.from_match_id(theirs)
        assert (
            back.score == key.score
            and back.cube == key.cube
            and back.dice == (max(key.dice), min(key.dice))
        )


def test_default_is_a_centred_cube_match() -> None:
    key = MatchKey(match_length=5, game_state=GameState.PLAYING, dice=(3, 1))
    assert MatchKey.from_match_id(key.match_id()) == key


@pytest.mark.parametrize(
    ("mid", "message"), [("short", "12 characters"), ("!!!!!!!!!!!!", "not valid base64")]
)
def test_invalid_match_ids(mid: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MatchKey.from_match_id(mid)


def test_cube_must_be_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        MatchKey(cube=3).match_id()
