"""The terminal client's board and command parsing."""

from __future__ import annotations

import re

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2
from client.terminal import HELP, describe, goodbye, parse, render
from engine.position import Position


def _lit(frm: int, to: list[int]) -> table_pb2.LitPoints:
    lit = table_pb2.LitPoints(to=to)
    setattr(lit, "from", frm)  # a Python keyword as a field name
    return lit


def test_render_draws_both_sides_pips_dice_and_lit_moves() -> None:
    start = Position.start()
    view = table_pb2.TableView(
        seat=0, decider=0, phase="PHASE_MOVING",
        own=list(start.mover), opponent=list(start.opponent),
        pips=[167, 167], score=[0, 0], match_length=1, cube=1, cube_owner=-1, dice=[3, 1],
        game_no=1,
        deadline_ms=10_000, deadline_kind="DEADLINE_KIND_TURN",
        lit=[_lit(8, [5, 7])],
    )  # fmt: skip
    text = render(view, now_ms=4_000)
    assert " 5X" in text and " 5O" in text  # 5 on your 6-point, 5 of theirs on your 12-point
    assert "pips: you 167  them 167" in text and "dice 3-1" in text and "turn in 6 s" in text
    assert "lit: 8->5/7" in text


def test_parse_commands() -> None:
    move = parse("move bar 22")
    assert (
        isinstance(move, table_pb2.Command)
        and getattr(move.move, "from") == 25
        and move.move.to == 22
    )
    play = parse("play 8/5 6/5")
    assert isinstance(play, table_pb2.Command) and len(play.submit_play.steps) == 2
    roll = parse("roll")
    assert isinstance(roll, table_pb2.Command) and roll.WhichOneof("kind") == "roll"
    assert parse("help") == "help" and parse("auto on") == "auto on"
    assert parse("fly away") is None and parse("move x y") is None


def _steps(cmd: object) -> list[tuple[int, int]]:
    assert isinstance(cmd, table_pb2.Command), cmd
    return [(getattr(st, "from"), st.to) for st in cmd.submit_play.steps]


def test_plays_in_gnubgs_notation_hits_repeats_and_chains() -> None:
    """Issue 27, item 11: a play as gnubg writes it: a hit is marked `*` (the table knows it
    anyway), `(2)` repeats a move, a checker's path may chain points, bar and off by name."""
    assert _steps(parse("p 24/20* 13/8")) == [(24, 20), (13, 8)]
    assert _steps(parse("play 8/5(2) 6/5(2)")) == [(8, 5), (8, 5), (6, 5), (6, 5)]
    assert _steps(parse("p 24/18*/13")) == [(24, 18), (18, 13)]
    assert _steps(parse("p bar/22* 6/off")) == [(25, 22), (6, 0)]
    move = parse("m 13 10*")
    assert isinstance(move, table_pb2.Command) and move.move.to == 10
    for bad in ("p 24", "p 24/x", "p 8/5(9)", "p 8/5(2"):
        assert parse(bad) is None, bad


def test_quitting_mid_match_says_the_match_goes_on() -> None:
    playing = table_pb2.TableView(phase="PHASE_MOVING")
    over = table_pb2.TableView(phase="PHASE_MATCH_OVER")
    assert "match goes on without you" in goodbye(playing) and "leave" in goodbye(playing)
    assert goodbye(over) == "bye" and goodbye(None) == "bye"


def test_the_score_names_and_the_opponents_play_read_as_a_person_says_them() -> None:
    start = Position.start()
    view = table_pb2.TableView(
        seat=1, decider=0, phase="PHASE_MOVING", player_ids=["gann", "gbob"],
        own=list(start.mover), opponent=list(start.opponent), pips=[167, 167],
        score=[0, 2], match_length=3, cube=1, cube_owner=-1, game_no=3, winner=-1,
    )  # fmt: skip
    text = render(view, names={"gann": "ann"})
    assert "score 2-0 (match to 3)" in text and "O: ann" in text
    rolled = events_pb2.TableEvent(dice_rolled=events_pb2.DiceRolled(seat=0, dice=[6, 5]))
    moved = events_pb2.TableEvent(
        checkers_moved=events_pb2.CheckersMoved(
            seat=0, steps=[events_pb2.Step(**{"from": 24, "to": 18})]
        )
    )
    assert describe(rolled, view, {"gann": "ann"}) == "ann rolled 6-5"
    assert describe(moved, view, {"gann": "ann"}) == "ann moved 24/18"
    assert describe(moved, view, {}) == "gann moved 24/18"  # a lapsed name: the id


def test_help_lists_every_command_including_auto() -> None:
    for word in ("roll", "move FROM TO", "play 8/5 6/5", "undo", "done", "double", "take",
                 "drop", "boost", "resign", "auto on / auto off", "rematch / accept", "leave",
                 "help", "quit", "hint"):  # fmt: skip
        assert word in HELP, word


def test_a_player_reads_sentences_never_codes_or_rule_numbers() -> None:
    """Issue 41, item 21: the terminal says what the browser says (one table of sentences),
    never an error code, the server's developer message, or a rule's number."""
    from pathlib import Path

    from client import terminal
    from client.words import UNKNOWN, closed_sentence, says, sentence

    assert sentence("NOT_YOUR_TURN") == "Wait for your turn." and len(says()) > 80
    assert sentence("A_CODE_FROM_A_NEWER_SERVER") == UNKNOWN
    assert closed_sentence("cannot_cover:p1") == says("CLOSED_SAYS")["cannot_cover"]
    assert closed_sentence("whatever") == "The table closed."
    assert not any(re.search(r"I-\d|\b[A-Z]+_[A-Z_]+\b", s) for s in says().values())
    view = table_pb2.TableView(phase="PHASE_MOVING")
    assert "I-" not in goodbye(view) and "RULES" not in goodbye(view)
    source = Path(terminal.__file__).read_text()
    assert ".details()" not in source and ".message" not in source
