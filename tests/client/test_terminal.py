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


def test_the_standings_commands_and_their_words() -> None:
    """Issue 60: `standing` and `board NAME [PAGE]` in the terminal; the figures in the
    browser's words (a rating with a decimal, a board's ordinal rank, a match's change)."""
    from bg.leaderboard.v1 import leaderboard_pb2 as lb
    from client.standing_text import board_lines, change_line, ordinal, profile_lines

    assert parse("standing") == "standing" and parse("board rating") == "board rating 1"
    assert parse("board league 3") == "board league 3"
    for bad in ("board gold", "board league 0", "board league x", "board"):
        assert parse(bad) is None, bad
    assert "standing" in HELP and "board NAME [PAGE]" in HELP
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 112)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "112th",
    ]  # fmt: skip
    assert change_line(lb.Change(board="rating", key="all", before=1500, after=1510.44)) == (
        "Rating 1500.0 → 1510.4 (+10.4)"
    )
    assert change_line(lb.Change(board="scored", key="easy", before=2, after=1)) == (
        "Scored points against the easy computer 2 → 1 (-1)"
    )
    top = lb.TopResponse(total=12, entries=[lb.Entry(rank=11, player_id="p1", score=40)])
    lines = board_lines("trophies", top, lb.RankResponse(rank=11, score=40), {}, "p1", 2)
    assert lines == [
        "trophies this week: page 2 of 2",
        "   11th  you                  40",
        "you: 11th of 12, 40",
    ]
    profile = lb.ProfileResponse(
        rating=1510.4, rated_matches=1, trophies=60, season_trophies=20, league_rank=2,
        league_diamonds=840, record=[lb.Record(profile="wagered", wins=2, losses=1)],
        rating_course=[lb.RatingPoint(rating=1510.4)],
    )  # fmt: skip
    assert profile_lines(profile) == [
        "rating 1510.4 after 1 ranked match", "  its course: 1510.4",
        "record: wagered 2 won, 1 lost", "trophies 60 all time, 20 this week",
        "league this week: 840 diamonds won, 2nd",
    ]  # fmt: skip
