"""Helpers for rules scenarios: build a table in a chosen spot, rig the next dice, act."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any, TypeVar

from engine import commands as c
from engine import dice as dice_stream
from engine import events as e
from engine.machine import Applied, Rejection, apply, new_match, next_deadline
from engine.profiles import RulesOptions
from engine.state import Phase, TableState
from engine.turn import Turn

SEED = bytes(16)


def side(points: dict[int, int], bar: int = 0) -> tuple[int, ...]:
    """A side from its owner's view: {point: checkers}, plus checkers on the bar."""
    out = [0] * 25
    for p, n in points.items():
        out[p - 1] = n
    out[24] = bar
    return tuple(out)


@cache
def _stream(n: int = 60000) -> tuple[tuple[int, int], ...]:
    out = []
    for value, cursor in dice_stream.values_from(SEED, 0):
        out.append((value, cursor))
        if len(out) == n:
            break
    return tuple(out)


def cursor_for(*values: int) -> int:
    """A cursor of SEED's stream from which the next values are exactly `values`."""
    stream = _stream()
    k = len(values)
    for i in range(len(stream) - k):
        if tuple(v for v, _ in stream[i : i + k]) == values:
            return 0 if i == 0 else stream[i - 1][1]
    raise AssertionError(f"no run {values} in the first {len(stream)} values")


def rig(state: TableState, *values: int) -> TableState:
    """The same state, with the next die values drawn being `values`."""
    return dataclasses.replace(
        state, secret=dataclasses.replace(state.secret, cursor=cursor_for(*values))
    )


@cache
def seed_opening(*values: int) -> bytes:
    """A seed whose stream starts with `values` (an opening roll: seat 0's die, seat 1's)."""
    for i in range(1, 1_000_000):
        seed = i.to_bytes(16, "big")
        if dice_stream.first_values(seed, len(values)) == list(values):
            return seed
    raise AssertionError(f"no seed starts with {values}")


def start(options: RulesOptions, *opening: int, now: int = 0) -> Applied:
    """A new match whose stream starts with `opening` (default 4, 1: seat 0 starts with 4-1)."""
    return new_match(options, seed_opening(*(opening or (4, 1))), now)


def spot(
    options: RulesOptions,
    sides: tuple[tuple[int, ...], tuple[int, ...]],
    turn: int = 0,
    now: int = 0,
    **changes: Any,
) -> TableState:
    """A table in AWAIT_ROLL for `turn` with the given board (and other state changes)."""
    state = new_match(options, SEED, now).state
    clock = None
    if options.turn_clock_ms is not None:
        clock = now + options.turn_clock_ms + options.grace_ms
    elif options.move_time_ms is not None:
        clock = now + options.move_time_ms
    fields: dict[str, Any] = {
        "sides": sides,
        "turn": turn,
        "phase": Phase.AWAIT_ROLL,
        "dice": None,
        "play": None,
        "phase_started_ms": now,
        "clock_deadline_ms": clock,
        "game_no": 1,
        "rolls": (),
    }
    fields.update(changes)
    match = dataclasses.replace(state.match, **fields)
    if match.phase is Phase.MOVING and match.play is None and match.dice is not None:
        match = dataclasses.replace(match, play=Turn(match.position(turn), match.dice))
    return TableState(match, state.secret)


def ok(state: TableState, cmd: c.Command, now: int) -> Applied:
    out = apply(state, cmd, now)
    assert isinstance(out, Applied), out
    return out


def refused(state: TableState, cmd: c.Command, now: int, code: str) -> Rejection:
    out = apply(state, cmd, now)
    assert isinstance(out, Rejection), f"expected {code}, got events {out}"
    assert out.code == code, out
    return out


def clock(state: TableState) -> Applied:
    """Advance to the next deadline and apply it."""
    due = next_deadline(state.match)
    assert due is not None
    return ok(state, c.Deadline(), due.at_ms)


def types(events: tuple[Any, ...]) -> list[str]:
    return [e.type for e in events]


E = TypeVar("E", bound=e.Event)


def event(kind: type[E], found: e.Event) -> E:
    """`found`, checked to be a `kind` event (so a test reads its fields typed)."""
    assert isinstance(found, kind), found
    return found
