"""A finished match exported as a `.mat` file is read back by GNU Backgammon (a test-only
oracle, which checks every play is legal as it imports): the same games, winners, points and
final score. And the JSON export holds the whole archive."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from bg.events.v1 import events_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from engine import profiles
from engine.profiles import RulesOptions
from services.gateway.match_export import match_length, to_json, to_mat
from services.table.convert import table_event
from services.table.ports import TableMeta
from services.table.table_core import RECORD_KINDS
from tests.engine.gnubg_oracle import gnubg_import_mat
from tests.engine.playout import play_match

META = TableMeta(table_id="t1", match_id="t1-1", player_ids=["gann", "gbob"])


def _archive(options: RulesOptions, seed: int) -> tuple[list[events_pb2.TableEvent], Any]:
    rng = random.Random(seed)
    run = play_match(options, rng.randbytes(16), rng)
    assert run.state.match.finished
    events = [
        table_event(ev, seq, META, run.state.match, 0) for seq, ev in enumerate(run.events, 1)
    ]
    return [ev for ev in events if ev.WhichOneof("body") in RECORD_KINDS], run.state.match


@pytest.mark.parametrize(
    "options", [profiles.casual(3, cube=True), profiles.wagered(1, 100), profiles.scored(3)]
)
@pytest.mark.parametrize("seed", [1, 2])
def test_gnubg_imports_the_match_file_and_agrees_on_every_game(
    options: RulesOptions, seed: int, tmp_path: Path
) -> None:
    moves, match = _archive(options, seed)
    text = to_mat(moves, ["ann", "bob"], match_length(moves))
    path = tmp_path / "match.mat"
    path.write_text(text)
    imported = gnubg_import_mat(path)
    assert imported["match-info"]["match-length"] == options.match_length
    games = imported["games"]
    assert len(games) == len(match.games), text
    for ours, theirs in zip(match.games, games, strict=True):
        assert theirs["info"]["winner"] == ("X" if ours.winner == 0 else "O"), text
        assert theirs["info"]["points-won"] == ours.points, text
    # Every turn was imported as a legal move (gnubg drops what it cannot play).
    rolls = len(re.findall(r"\b[1-6][1-6]:", text))
    played = sum(1 for g in games for a in g["game"] if a["action"] == "move")
    assert played == rolls, text
    final = games[-1]["info"]
    score = [final["score-X"], final["score-O"]]
    score[0 if final["winner"] == "X" else 1] += final["points-won"]
    assert score == list(match.score)


def test_the_json_export_holds_the_archive_and_names() -> None:
    moves, _ = _archive(profiles.casual(1), 3)
    archived = leaderboard_pb2.ArchivedMatchResponse(
        summary=leaderboard_pb2.MatchSummary(match_id="t1-1", player_ids=["gann", "gbob"]),
        seed_hex="00" * 16,
        fingerprint="f",
        moves=moves,
    )
    data = json.loads(to_json(archived, {"gann": "ann"}))
    assert data["names"] == {"gann": "ann", "gbob": "gbob"}
    assert len(data["moves"]) == len(moves) and data["seed_hex"] == "00" * 16
