"""One archived match end event in, its analysis out (bg.analysis.v1.MatchAnalysis): the record
read back into games (record.py), judged by evaluator/analysis.py. CPU only, no I/O: the worker
runs it off the event loop."""

from __future__ import annotations

from typing import Any

from bg.analysis.v1 import analysis_pb2
from bg.events.v1 import events_pb2
from evaluator.analysis import Analysis, analyse
from evaluator.evaluate import Evaluator
from services.analysis.record import Record, match_length, record_of


def end_event(raw: bytes) -> events_pb2.TableEvent:
    event = events_pb2.TableEvent()
    event.ParseFromString(raw)
    return event


def players_of(raw: bytes) -> list[str]:
    event = end_event(raw)
    body: Any = getattr(event, event.WhichOneof("body") or "", None)
    return [] if body is None else list(body.info.player_ids)


def profile_of(raw: bytes) -> str:
    event = end_event(raw)
    body: Any = getattr(event, event.WhichOneof("body") or "", None)
    return "" if body is None else str(body.info.profile)


def judge(raw: bytes, evaluator: Evaluator | None = None) -> analysis_pb2.MatchAnalysis:
    """The analysis of a match end event (MatchEnded or MatchClosed, with its moves). Raises
    ValueError for a record that is not a legal match."""
    event = end_event(raw)
    body: Any = getattr(event, event.WhichOneof("body") or "")
    record = record_of(body.moves)
    found = analyse(record.games, match_length(event), evaluator)
    return to_proto(event, record, found)


def to_proto(
    event: events_pb2.TableEvent, record: Record, found: Analysis
) -> analysis_pb2.MatchAnalysis:
    body: Any = getattr(event, event.WhichOneof("body") or "")
    players = list(body.info.player_ids)
    out = analysis_pb2.MatchAnalysis(
        match_id=event.match_id, table_id=event.table_id, player_ids=players,
        state=analysis_pb2.ANALYSIS_STATE_DONE, ended_ms=event.at_ms,
    )  # fmt: skip
    for d in found.decisions:
        out.decisions.append(
            analysis_pb2.Decision(
                game=d.game,
                seat=d.seat,
                kind=d.kind,
                position_id=d.position_id,
                dice=list(d.dice or ()),
                played=d.played,
                best=d.best,
                lost=d.lost,
                mark=d.mark,
                luck=d.luck or 0.0,
                move_index=record.move_index[d.game - 1][d.action],
                best_steps=[analysis_pb2.Step(**{"from": f, "to": t}) for f, t in d.best_steps],
            )
        )
    for seat, p in enumerate(found.players):
        out.players.append(
            analysis_pb2.PlayerSummary(
                player_id=players[seat] if seat < len(players) else "",
                decisions=p.decisions,
                error_rate=p.error_rate,
                band=p.band,
                luck=p.luck,
                doubtful=p.marks["doubtful"],
                bad=p.marks["bad"],
                very_bad=p.marks["very bad"],
            )
        )
    return out
