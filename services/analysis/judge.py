"""One archived match end event in, its analysis out (bg.analysis.v1.MatchAnalysis): the record
read back into games (record.py), judged by evaluator/analysis.py. CPU only, no I/O: the worker
runs it off the event loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bg.analysis.v1 import analysis_pb2
from bg.events.v1 import events_pb2
from engine.position import Position
from evaluator.analysis import Analysis, analyse, roll_luck
from evaluator.evaluate import Evaluator, default
from services.analysis.fair_play import Evidence, MatchEvidence, match_evidence
from services.analysis.record import Record, match_length, record_of
from services.contracts.seats import is_computer


def end_event(raw: bytes) -> events_pb2.TableEvent:
    event = events_pb2.TableEvent()
    event.ParseFromString(raw)
    return event


@dataclass(frozen=True)
class Facts:
    """What a match end event says of its match, besides the moves."""

    match_id: str
    table_id: str
    ended_ms: int
    player_ids: tuple[str, ...]
    profile: str
    test_game: bool
    rated: bool = False
    tournament: bool = False

    @property
    def trended(self) -> tuple[str, ...]:
        """The players whose error-rate trend this match joins: people only, and never for a
        scored test game (recorded nowhere, I-19)."""
        return () if self.test_game else tuple(p for p in self.player_ids if not is_computer(p))

    @property
    def tested(self) -> tuple[str, ...]:
        """The players the fair-play test takes this match from: play a restriction keeps one
        from (matchmaking's ranked_or_staked): diamonds, trophies or a rating at stake."""
        at_stake = self.profile in ("wagered", "scored") or self.rated or self.tournament
        return self.trended if at_stake else ()


def facts_of(raw: bytes) -> Facts:
    event = end_event(raw)
    body: Any = getattr(event, event.WhichOneof("body") or "", None)
    info = body.info if body is not None else events_pb2.MatchInfo()
    return Facts(
        event.match_id,
        event.table_id,
        event.at_ms,
        tuple(info.player_ids),
        info.profile,
        info.test_game,
        info.rated,
        info.tournament,
    )


def judge(
    raw: bytes, evaluator: Evaluator | None = None, luck: bool = False
) -> analysis_pb2.MatchAnalysis:
    """The analysis of a match end event (MatchEnded or MatchClosed, with its moves). Raises
    ValueError for a record that is not a legal match. Without `luck` the rolls' luck is left
    for `with_luck`, when the analysis is first read (`luck_pending`)."""
    event = end_event(raw)
    body: Any = getattr(event, event.WhichOneof("body") or "")
    record = record_of(body.moves)
    found = to_proto(event, record, analyse(record.games, match_length(event), evaluator, luck))
    found.luck_pending = not luck
    return found


def with_luck(raw: bytes, evaluator: Evaluator | None = None) -> analysis_pb2.MatchAnalysis:
    """A stored analysis (`luck_pending`) with each roll's luck and each player's sum: from the
    positions and dice its decisions name, nothing else needed."""
    found = analysis_pb2.MatchAnalysis.FromString(raw)
    ev = evaluator or default()
    totals = [0.0] * len(found.players)
    for d in found.decisions:
        if d.kind != "move":
            continue
        d.luck = roll_luck(ev, Position.from_gnubg_id(d.position_id), (d.dice[0], d.dice[1]))
        if d.seat < len(totals):
            totals[d.seat] += d.luck
    for summary, luck in zip(found.players, totals, strict=True):
        summary.luck = luck
    found.luck_pending = False
    return found


def to_proto(
    event: events_pb2.TableEvent, record: Record, found: Analysis
) -> analysis_pb2.MatchAnalysis:
    body: Any = getattr(event, event.WhichOneof("body") or "")
    players = list(body.info.player_ids)
    out = analysis_pb2.MatchAnalysis(
        match_id=event.match_id,
        table_id=event.table_id,
        player_ids=players,
        state=analysis_pb2.ANALYSIS_STATE_DONE,
        ended_ms=event.at_ms,
    )
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
                gap=d.gap,
                think_ms=d.think_ms,
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


def fair_play_evidence(
    found: analysis_pb2.MatchAnalysis, players: tuple[str, ...]
) -> dict[str, MatchEvidence]:
    """Each of `players`' evidence from their seat's judged decisions (services/analysis/
    fair_play.py): checker plays tested, cube decisions summed apart."""
    out = {}
    for seat, player in enumerate(found.player_ids):
        if player not in players:
            continue
        mine = [d for d in found.decisions if d.seat == seat]
        moves = [Evidence(d.gap, d.lost, d.think_ms) for d in mine if d.kind == "move"]
        cube = [d.lost for d in mine if d.kind != "move"]
        if moves:
            out[player] = match_evidence(moves, cube)
    return out
