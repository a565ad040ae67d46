"""A finished match's archive as a file a player keeps: a GNU Backgammon-importable match file
(`.mat`, the Jellyfish format: `import mat` in gnubg) or JSON.

The archive's move list (the table service's RECORD_KINDS) holds, per game, its start, the
opening rolls, every roll, each turn's final steps (`turn_ended`, from the mover's side, as the
format numbers them too), passes and the cube. A game's lines pair the two seats' actions, seat
0 on the left, as gnubg writes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format

from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2

CELL = 28  # width of the left column, as gnubg exports it


def _point(p: int) -> str:
    return "bar" if p == 25 else "off" if p == 0 else str(p)


def _play(steps: Sequence[events_pb2.Step], hits: set[int]) -> str:
    out = []
    for s in steps:
        to = s.to
        out.append(f"{_point(getattr(s, 'from'))}/{_point(to)}{'*' if to in hits else ''}")
    return " ".join(out)


def _hits(mover: list[int], opponent: list[int], steps: Sequence[events_pb2.Step]) -> set[int]:
    """Apply `steps` to the boards (each side's own numbering, index 24 the bar), returning the
    mover's points where a step hit."""
    hit = set()
    for s in steps:
        frm, to = getattr(s, "from"), s.to
        mover[frm - 1] -= 1
        if to == 0:
            continue
        mover[to - 1] += 1
        theirs = 24 - to  # the same point from the opponent's side, as an index
        if opponent[theirs] == 1:
            opponent[theirs] = 0
            opponent[24] += 1
            hit.add(to)
    return hit


START = [0, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0]


class _Game:
    def __init__(self, number: int, score: Sequence[int]) -> None:
        self.number = number
        self.score = list(score) + [0] * (2 - len(score))
        self.cells: list[str] = []  # reading order: row 1 left, row 1 right, row 2 left, ...
        self.boards = [list(START), list(START)]
        self.dice: list[tuple[int, int] | None] = [None, None]

    def act(self, seat: int, text: str) -> None:
        """The next cell in reading order that is this seat's column (seat 0 left): a seat
        acting twice running leaves the other's cell blank."""
        if len(self.cells) % 2 != seat:
            self.cells.append("")
        self.cells.append(text)

    @property
    def rows(self) -> list[tuple[str, str]]:
        cells = self.cells + [""] * (len(self.cells) % 2)
        return [(cells[i], cells[i + 1]) for i in range(0, len(cells), 2)]

    def moved(self, seat: int, steps: Sequence[events_pb2.Step]) -> None:
        dice = self.dice[seat] or (0, 0)
        hits = _hits(self.boards[seat], self.boards[1 - seat], steps)
        self.act(seat, f"{dice[0]}{dice[1]}: {_play(steps, hits)}".rstrip())
        self.dice[seat] = None


def to_mat(moves: Sequence[events_pb2.TableEvent], names: Sequence[str], length: int) -> str:
    """The match file: `names` by seat, `length` the match length."""
    games: list[_Game] = []
    game: _Game | None = None
    for ev in moves:
        kind = ev.WhichOneof("body")
        body: Any = getattr(ev, kind) if kind else None
        if kind == "game_started":
            game = _Game(body.game_no, body.score)
            games.append(game)
        elif game is None:
            continue
        elif kind == "opening_roll" and body.starter in (0, 1):
            first, second = body.dice[body.starter], body.dice[1 - body.starter]
            game.dice[body.starter] = (first, second)  # played unless the starter rolls anew
        elif kind == "dice_rolled":
            game.dice[body.seat] = (body.dice[0], body.dice[1])
        elif kind == "turn_ended":
            game.moved(body.seat, body.steps)
        elif kind == "turn_passed" and len(body.dice) == 2:
            game.act(body.seat, f"{body.dice[0]}{body.dice[1]}:")
            game.dice[body.seat] = None
        elif kind == "double_offered":
            game.act(body.seat, f" Doubles => {body.cube}")
        elif kind == "double_taken":
            game.act(body.seat, " Takes")
        elif kind == "double_dropped":
            game.act(body.seat, " Drops")
        elif kind == "game_ended":
            points = body.points
            game.act(body.winner_seat, f" Wins {points} point{'s' if points != 1 else ''}")
    lines = [f" {length} point match", ""]
    for g in games:
        header = f" {names[0]} : {g.score[0]}".ljust(32) + f"{names[1]} : {g.score[1]}"
        lines += [f" Game {g.number}", header]
        for n, (left, right) in enumerate(g.rows, 1):
            lines.append((f"{n:3d}) " + left.ljust(CELL) + right).rstrip())
        lines.append("")
    return "\n".join(lines) + "\n"


def mat_name(name: str) -> str:
    """A player's name as the format can hold it: one word, no colon."""
    word = "_".join(name.replace(":", " ").split())
    return word[:32] or "player"


def match_length(moves: Sequence[events_pb2.TableEvent]) -> int:
    for ev in moves:
        if ev.WhichOneof("body") == "game_ended" and ev.game_ended.info.match_length:
            return int(ev.game_ended.info.match_length)
    return 1


def to_json(archived: leaderboard_pb2.ArchivedMatchResponse, names: dict[str, str]) -> str:
    """The whole archive (summary, seed, fingerprint, every move) plus the players' names."""
    data = json_format.MessageToDict(archived, preserving_proto_field_name=True)
    data["names"] = {p: names.get(p, p) for p in archived.summary.player_ids}
    return json.dumps(data, indent=1, sort_keys=True)


def export(
    archived: leaderboard_pb2.ArchivedMatchResponse, names: dict[str, str], fmt: str
) -> gateway_pb2.ExportMatchResponse:
    """The archive as a file to download: `mat` or `json`."""
    stem = f"match-{archived.summary.match_id}"
    if fmt == "json":
        return gateway_pb2.ExportMatchResponse(
            filename=stem + ".json",
            content_type="application/json",
            content=to_json(archived, names),
        )
    moves = list(archived.moves)
    seats = [mat_name(names.get(p) or p) for p in archived.summary.player_ids]
    return gateway_pb2.ExportMatchResponse(
        filename=stem + ".mat",
        content_type="text/plain",
        content=to_mat(moves, seats, match_length(moves)),
    )
