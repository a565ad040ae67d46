"""Drive whole matches through the state machine with bots (tests and benchmarks)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from engine import bots
from engine import commands as c
from engine import events as e
from engine.machine import Applied, Rejection, apply, may_double, new_match, next_deadline
from engine.profiles import RulesOptions
from engine.state import Phase, TableState


@dataclass
class Run:
    state: TableState
    now: int
    events: list[e.Event] = field(default_factory=list)
    commands: int = 0


def step(run: Run, cmd: c.Command) -> Applied:
    out = apply(run.state, cmd, run.now)
    assert not isinstance(out, Rejection), (cmd, out)
    run.state = out.state
    run.events.extend(out.events)
    run.commands += 1
    return out


def wait_deadline(run: Run) -> Applied:
    due = next_deadline(run.state.match)
    assert due is not None
    run.now = max(run.now, due.at_ms)
    return step(run, c.Deadline())


def play_match(
    options: RulesOptions,
    seed: bytes,
    rng: random.Random,
    strategy: str = "normal",
    idle_chance: float = 0.0,
    max_commands: int = 20000,
) -> Run:
    """Bots play both seats; with `idle_chance` a seat lets its clock run out instead."""
    applied = new_match(options, seed, 0)
    run = Run(applied.state, 0, list(applied.events))
    choose = bots.STRATEGIES[strategy]
    while not run.state.match.finished and run.commands < max_commands:
        m = run.state.match
        run.now += 50
        seat = m.decider
        due = next_deadline(m)
        if m.phase is Phase.BETWEEN_GAMES or (idle_chance and rng.random() < idle_chance and due):
            wait_deadline(run)
            continue
        if m.phase is Phase.AWAIT_ROLL:
            pos = m.position(seat)
            if may_double(m, seat) and bots.cube_advice(pos).double:
                step(run, c.OfferDouble(seat))
            else:
                step(run, c.Roll(seat))
        elif m.phase is Phase.DOUBLE_OFFERED:
            doubler_view = m.position(1 - seat)
            step(run, c.Take(seat) if bots.cube_advice(doubler_view).take else c.Drop(seat))
        elif m.phase is Phase.MOVING:
            assert m.play is not None and m.dice is not None
            play = choose(m.play.start, m.dice, rng)
            assert play is not None
            for frm, to in play.steps:
                if run.state.match.phase is not Phase.MOVING or run.state.match.turn != seat:
                    break
                step(run, c.Move(seat, frm, to))
            after = run.state.match
            if after.phase in (Phase.MOVING, Phase.CONFIRMING) and after.turn == seat:
                step(run, c.Confirm(seat))
        elif m.phase is Phase.CONFIRMING or m.phase is Phase.NO_MOVE:
            step(run, c.Confirm(seat))
    return run
