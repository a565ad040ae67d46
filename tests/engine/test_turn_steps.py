"""I-30 step by step: the turn's allowed steps, the paths a move takes, lit points and
completeness agree with their definition, searched in full. `engine/turn.py` decides whether a
legal result is still reachable by counting the dice every legal play uses (a lit point is asked
for on every roll's view); the reference below searches every order of every remaining die, as
the rule reads. Bearing-off positions are drawn apart: there a die may be worth more pips than
it moves, and a position short of the dice can be a legal result already."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.movegen import legal_plays
from engine.position import Position
from engine.steps import Step, apply_step, is_hit, step_die
from engine.turn import (
    Turn,
    TurnError,
    _most,
    _quiet_lit,
    _single_die_play,
    _stepped_play,
    dice_values,
)
from tests.engine.corpus import selfplay_corpus
from tests.engine.strategies import dice, positions


@cache
def _results(start: Position, roll: tuple[int, int]) -> frozenset[Position]:
    return frozenset(p.result for p in legal_plays(start, roll))


def _steps(position: Position, die: int) -> list[Step]:
    me = position.mover
    sources = [25] if me[24] else [p for p in range(24, 0, -1) if me[p - 1]]
    return [
        (f, max(f - die, 0))
        for f in sources
        if step_die(position, (f, max(f - die, 0)), (die,)) == die
    ]


@cache
def reaches(start: Position, roll: tuple[int, int], at: Position, rest: tuple[int, ...]) -> bool:
    """The definition: `at` is a legal result, or some die left plays a step that reaches one."""
    if at in _results(start, roll):
        return True
    for die in set(rest):
        left = list(rest)
        left.remove(die)
        if any(reaches(start, roll, apply_step(at, s), tuple(left)) for s in _steps(at, die)):
            return True
    return False


def reference_paths(turn: Turn, frm: int) -> dict[int, list[tuple[Step, ...]]]:
    """One checker's destinations from `frm` and the single-step paths to each, in the order
    found: one die, or several through empty or own points (never hitting on the way), each
    keeping a legal result reachable."""
    out: dict[int, list[tuple[Step, ...]]] = {}

    def walk(pos: Position, at: int, rest: tuple[int, ...], path: tuple[Step, ...]) -> None:
        for die in sorted(set(rest), reverse=True):
            step = (at, max(at - die, 0))
            if step_die(pos, step, (die,)) != die:
                continue
            left = list(rest)
            left.remove(die)
            left_t = tuple(sorted(left, reverse=True))
            nxt = apply_step(pos, step)
            if reaches(turn.start, turn.dice, nxt, left_t):
                out.setdefault(step[1], []).append((*path, step))
            if step[1] > 0 and left_t and not is_hit(pos, step) and nxt.mover[24] == 0:
                walk(nxt, step[1], left_t, (*path, step))

    walk(turn.current, frm, turn.remaining, ())
    return out


def _sources(position: Position) -> list[int]:
    me = position.mover
    return [25] if me[24] else [p for p in range(24, 0, -1) if me[p - 1]]


def reference_lit(turn: Turn) -> dict[int, list[int]]:
    found = {frm: reference_paths(turn, frm) for frm in _sources(turn.current)}
    return {frm: sorted(paths, reverse=True) for frm, paths in found.items() if paths}


def reference_complete(turn: Turn) -> bool:
    current = turn.current
    if current not in _results(turn.start, turn.dice):
        return False
    rest = turn.remaining
    for die in set(rest):
        left = list(rest)
        left.remove(die)
        for s in _steps(current, die):
            if reaches(
                turn.start, turn.dice, apply_step(current, s), tuple(sorted(left, reverse=True))
            ):
                return False
    return True


@st.composite
def _bearing_off(draw: st.DrawFn) -> Position:
    """Every mover's checker home (some borne off), the opponent anywhere else, its points in
    the mover's home board included: where a die can be worth more pips than it moves."""
    mover = [0] * 25
    for _ in range(draw(st.integers(1, 15))):
        mover[draw(st.integers(0, 5))] += 1
    opponent = [0] * 25
    for _ in range(draw(st.integers(0, 15))):
        slot = draw(st.integers(0, 24))
        if slot < 24 and mover[23 - slot]:
            continue
        opponent[slot] += 1
    return Position(tuple(mover), tuple(opponent))


bearing_off = _bearing_off()


@settings(max_examples=300, deadline=None)
@given(st.one_of(positions, bearing_off), dice, st.randoms(use_true_random=False))
def test_lit_points_and_completeness_match_the_full_search(
    pos: Position, roll: tuple[int, int], rng: object
) -> None:
    """At the roll and after each lit move chosen at random until the turn is complete."""
    turn = Turn(pos, roll)
    for _ in range(len(dice_values(roll)) + 1):
        lit = turn.lit()
        assert lit == reference_lit(turn), (pos.gnubg_id(), roll, turn.steps)
        for frm in _sources(turn.current):  # the paths a move takes, too
            assert turn._paths(frm) == reference_paths(turn, frm), (pos.gnubg_id(), roll, frm)
        assert turn.is_complete() == reference_complete(turn), (pos.gnubg_id(), roll, turn.steps)
        if not lit:
            break
        frm = rng.choice(sorted(lit))  # type: ignore[attr-defined]
        turn = turn.play(frm, rng.choice(lit[frm]))  # type: ignore[attr-defined]
    assert not turn.lit()  # the dice run out or nothing more keeps a legal result
    if legal_plays(pos, roll):
        assert turn.current in turn.results  # lit moves alone always end on a legal play


def test_a_quiet_rolls_counted_lit_points_are_the_searched_ones() -> None:
    """The count point by point (no checker on the bar, no bearing off before the last die)
    gives the full search's lit points on every roll of random games it applies to, and it
    applies to a good share of them (the rest go to the search)."""
    corpus = selfplay_corpus(3_000, seed=5)
    counted = 0
    for pos, roll in corpus:
        quiet = _quiet_lit(pos, roll, _most(pos, roll))
        doubles = roll[0] == roll[1]
        searched = (
            pos.mover[24] > 0
            or sum(pos.mover[6:24]) < (4 if doubles else 2)
            or _most(pos, roll) < (1 if doubles else 2)
        )
        assert (quiet is None) == searched, (pos.gnubg_id(), roll)
        if quiet is None:
            continue
        counted += 1
        assert {k: list(v) for k, v in quiet.items()} == reference_lit(Turn(pos, roll)), (
            pos.gnubg_id(), roll
        )  # fmt: skip
    assert counted > len(corpus) // 3


def test_only_the_higher_die_is_lit_when_either_die_alone_can_play() -> None:
    """One checker on the 24-point, 6-5, the 13-point made: 24/18 or 24/19 can play but neither
    then plays the other die, so the rules take the 6 alone; the 5's point is not lit."""
    mover = [0] * 25
    mover[23] = 1
    opponent = [0] * 25
    opponent[11] = 2  # faces the mover's 13-point
    opponent[18] = 13
    turn = Turn(Position(tuple(mover), tuple(opponent)), (5, 6))
    assert turn.lit() == reference_lit(turn) == {24: [18]}
    assert not turn.is_complete()
    done = turn.play(24, 18)
    assert done.is_complete() and reference_complete(done)


@settings(max_examples=300, deadline=None)
@given(st.one_of(positions, bearing_off), dice)
def test_a_play_of_single_die_steps_makes_the_turn_step_by_step_play_makes(
    pos: Position, roll: tuple[int, int]
) -> None:
    """validate_play's shortcut: every legal play, in its own order and backwards where that
    order is legal too, makes the same turn (steps, groups, dice used) as playing it step by
    step; a play that is not legal is left to the step-by-step play (which names the fault)."""
    plays = legal_plays(pos, roll)
    for play in plays:
        for steps in (play.steps, play.steps[::-1]):
            fast = _single_die_play(pos, roll, steps)
            try:
                slow = _stepped_play(pos, roll, steps)
            except TurnError:
                assert fast is None, (pos.gnubg_id(), roll, steps)
                continue
            if fast is not None:
                assert fast == slow, (pos.gnubg_id(), roll, steps)
    if plays:
        assert _single_die_play(pos, roll, plays[0].steps) is not None
        short = plays[0].steps[:-1]  # a die left to play: refused, unless bearing off with a
        after = pos  # die worth more than it moved reached the same position as the play
        for step in short:
            after = apply_step(after, step)
        assert (_single_die_play(pos, roll, short) is None) == (after not in _results(pos, roll))
