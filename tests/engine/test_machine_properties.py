"""Whole matches through the state machine: invariants, rejections change nothing, codec,
views never carry the seed."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import commands as c
from engine import profiles
from engine.machine import Rejection, apply, next_deadline
from engine.profiles import RulesOptions
from engine.view import player_view, player_views, spectator_view
from services.table.adapters import state_codec as codec
from tests.engine.playout import play_match

OPTIONS = [
    profiles.wagered(1, 100),
    profiles.wagered(3, 200),
    profiles.scored(3),
    profiles.scored(1, test=True),
    profiles.casual(3, cube=True),
    profiles.casual(1, async_mode=True),
]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(OPTIONS), st.integers(0, 2**31), st.sampled_from([0.0, 0.05]))
def test_matches_finish_with_fifteen_checkers_a_side(
    options: RulesOptions, seed: int, idle: float
) -> None:
    rng = random.Random(seed)
    run = play_match(options, rng.randbytes(16), rng, idle_chance=idle)
    m = run.state.match
    assert m.finished
    for s in m.sides:
        assert sum(s) <= 15 and min(s) >= 0
    # rolls recorded publicly are exactly the stream's draws (I-27)
    from engine import dice

    assert dice.verify(run.state.secret.seed, m.fingerprint, m.rolls)[0]
    assert codec.loads(codec.dumps(run.state)) == run.state


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(OPTIONS), st.integers(0, 2**31), st.integers(5, 60))
def test_rejected_commands_leave_the_state_as_it_was(
    options: RulesOptions, seed: int, n: int
) -> None:
    rng = random.Random(seed)
    run = play_match(options, rng.randbytes(16), rng, max_commands=n)
    state = run.state
    junk: list[c.Command] = [
        c.Move(0, 26, 3), c.Move(1, 1, 0), c.Roll(0), c.Roll(1), c.Take(0), c.Drop(1), c.Confirm(0),
        c.Undo(1), c.Boost(0), c.Boost(1), c.TakeBack(0), c.AcceptRematch(0), c.Move(5, 1, 1),
    ]  # fmt: skip
    for cmd in junk:
        out = apply(state, cmd, run.now + 1)
        if isinstance(out, Rejection):
            assert out.code and out.message
        # apply is pure: the input state is never modified, whatever the outcome
        assert state == run.state


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(OPTIONS), st.integers(0, 2**31), st.integers(1, 200))
def test_views_never_carry_the_seed(options: RulesOptions, seed: int, n: int) -> None:
    rng = random.Random(seed)
    run = play_match(options, rng.randbytes(16), rng, max_commands=n)
    secret = run.state.secret.seed.hex()
    m = run.state.match  # a commit builds both seats' views on the deadline it has found
    assert player_views(m, next_deadline(m)) == (player_view(m, 0), player_view(m, 1))
    for seat in (0, 1):
        view = player_view(run.state.match, seat)
        assert secret not in json.dumps(
            view, default=lambda o: o.__dict__ if hasattr(o, "__dict__") else str(o)
        )
        assert view.fingerprint == run.state.match.fingerprint
    if not run.state.match.finished:
        for event in run.events:
            assert secret not in json.dumps(event.to_dict(), default=str)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(OPTIONS), st.integers(0, 2**31), st.integers(1, 200))
def test_a_spectator_sees_the_turn_as_it_began_and_nothing_to_act_on(
    options: RulesOptions, seed: int, n: int
) -> None:
    """I-35: seat 0's side of the board as the seat not moving sees it, no lit points, no cube
    or confirm rights, no preferences, and never the seed."""
    rng = random.Random(seed)
    run = play_match(options, rng.randbytes(16), rng, max_commands=n)
    m = run.state.match
    watched = spectator_view(m)
    not_moving = player_view(m, 1 - m.turn)
    # The seat not moving sees the turn's start; seat 0's side of it is the spectator's.
    if m.turn == 0:
        assert (watched.own, watched.opponent) == (not_moving.opponent, not_moving.own)
    else:
        assert (watched.own, watched.opponent) == (not_moving.own, not_moving.opponent)
    assert watched.seat == 0 and not watched.lit and not watched.steps
    assert not (watched.can_double or watched.can_confirm or watched.auto_roll)
    assert run.state.secret.seed.hex() not in repr(watched)


def test_every_command_type_has_exactly_one_handler() -> None:
    """Issue 17: one handler per command type, in a table; a command without one is refused
    (UNKNOWN_COMMAND), never half applied."""
    from dataclasses import dataclass

    from engine import machine

    kinds = {
        k for k in vars(c).values()
        if isinstance(k, type) and issubclass(k, c.Command) and k is not c.Command
    }  # fmt: skip
    tables = (machine._SYSTEM, machine._AFTER_MATCH, machine._IN_MATCH)
    registered = [kind for table in tables for kind in table]
    assert len(registered) == len(set(registered)) and set(registered) == kinds

    @dataclass(frozen=True, slots=True)
    class Shout(c.Command):
        name = "shout"

    state = machine.new_match(profiles.casual(1), b"\0" * 16, 0).state
    out = apply(state, Shout(0), 10)
    assert isinstance(out, Rejection) and out.code == "UNKNOWN_COMMAND"


def test_a_state_change_naming_no_field_is_refused() -> None:
    """The transition's own replace (faster than dataclasses.replace) keeps its check: a change
    to a field MatchState lacks is a bug, raised, never dropped."""
    import dataclasses

    import pytest

    from engine.machine import _replace

    m = play_match(OPTIONS[2], bytes(16), random.Random(1), max_commands=3).state.match
    changes: dict[str, Any] = {"dice": (6, 5), "game_no": m.game_no + 7}
    assert _replace(m, changes) == dataclasses.replace(m, **changes) != m
    with pytest.raises(TypeError, match="no field 'dices'"):
        _replace(m, {"dices": (6, 5)})
