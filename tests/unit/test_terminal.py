"""The terminal client's board and command parsing."""

from __future__ import annotations

from bg.table.v1 import table_pb2
from client.terminal import parse, render
from engine.position import Position


def test_render_draws_both_sides_pips_dice_and_lit_moves() -> None:
    start = Position.start()
    view = table_pb2.TableView(
        seat=0, decider=0, phase="PHASE_MOVING",
        own=list(start.mover), opponent=list(start.opponent),
        pips=[167, 167], score=[0, 0], match_length=1, cube=1, cube_owner=-1, dice=[3, 1],
        game_no=1,
        deadline_ms=10_000, deadline_kind="DEADLINE_KIND_TURN",
        lit=[table_pb2.LitPoints(**{"from": 8, "to": [5, 7]})],
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
