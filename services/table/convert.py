"""proto <-> engine: commands in, events and views out."""

from __future__ import annotations

import dataclasses
import types
import typing
from enum import StrEnum
from functools import cache, lru_cache
from typing import Any

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2
from engine import commands as c
from engine import events as e
from engine.profiles import RulesOptions
from engine.state import GameRecord, MatchState
from engine.view import PlayerView
from engine.vocabulary import DeadlineKind, EndReason, GameResult, Phase
from services.common.errors import InvalidArgument
from services.contracts.vocabulary import to_proto
from services.table.ports import MatchRecord, Outcome, OutcomeState, TableMeta


def options_to_proto(o: RulesOptions) -> table_pb2.TableOptions:
    return table_pb2.TableOptions(
        profile=o.profile,
        match_length=o.match_length,
        bet=o.bet,
        rated=o.rated,
        move_time_s=(o.move_time_ms or 0) // 1000,
        test_game=o.test_game,
        level=o.level if o.level != "players" or o.profile == "scored" else "",
        no_gammons=not o.gammons,
        cube=o.cube,
        no_crawford=not o.crawford,
        async_mode=o.async_mode,
        tournament=o.tournament,
    )


def engine_command(cmd: table_pb2.Command, seat: int) -> c.Command:
    kind = cmd.WhichOneof("kind")
    simple: dict[str, type[c.Command]] = {
        "roll": c.Roll,
        "undo": c.Undo,
        "confirm": c.Confirm,
        "offer_double": c.OfferDouble,
        "take": c.Take,
        "drop": c.Drop,
        "resign": c.Resign,
        "leave": c.Leave,
        "boost": c.Boost,
        "take_back": c.TakeBack,
        "offer_rematch": c.OfferRematch,
        "accept_rematch": c.AcceptRematch,
    }
    if kind in simple:
        return simple[kind](seat)
    if kind == "move":
        return c.Move(seat, getattr(cmd.move, "from"), cmd.move.to)
    if kind == "submit_play":
        steps = tuple((getattr(s, "from"), s.to) for s in cmd.submit_play.steps)
        if not steps or len(steps) > 4:
            raise InvalidArgument("MALFORMED", "a play has 1 to 4 steps", field="submit_play")
        return c.SubmitPlay(seat, steps)
    if kind == "set_auto_roll":
        return c.SetAutoRoll(seat, cmd.set_auto_roll.on)
    raise InvalidArgument("MALFORMED", "the command is empty or unknown", field="command")


def match_info(meta: TableMeta, o: RulesOptions) -> events_pb2.MatchInfo:
    return events_pb2.MatchInfo(
        profile=o.profile,
        player_ids=meta["player_ids"],
        match_length=o.match_length,
        rated=o.rated,
        bet=o.bet,
        test_game=o.test_game,
        level=o.level,
        tournament=o.tournament,
    )


_ONEOF_NAME: dict[type[e.Event], str] = {e.TableClosed: "match_closed"}
_RENAMED = {"winner": "winner_seat"}


@cache
def _fields(cls: Any) -> tuple[tuple[str, str, Any], ...]:
    """(engine field, proto field, how to write it) for one event class, worked out once."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        base = args[0] if typing.get_origin(hint) in (types.UnionType, typing.Union) else hint
        if isinstance(base, type) and issubclass(base, StrEnum):
            how: Any = base
        elif f.name == "steps":
            how = "steps"
        elif typing.get_origin(base) is tuple:
            how = "repeated"
        else:
            how = "scalar"
        out.append((f.name, _RENAMED.get(f.name, f.name), how))
    return tuple(out)


def _steps(steps: Any) -> list[events_pb2.Step]:
    return [events_pb2.Step(**{"from": a, "to": b}) for a, b in steps]


def table_event(
    event: e.Event, seq: int, meta: TableMeta, match: MatchState, now_ms: int
) -> events_pb2.TableEvent:
    """The typed proto of one engine event (one message per event type, in the `body` oneof)."""
    out = events_pb2.TableEvent(
        event_id=f"{meta['table_id']}:{seq}",
        table_id=meta["table_id"],
        seq=seq,
        match_id=meta["match_id"],
        at_ms=now_ms,
    )
    body = getattr(out, _ONEOF_NAME.get(type(event), event.type))
    body.SetInParent()
    cls: Any = type(event)
    for name, proto_name, how in _fields(cls):
        value = getattr(event, name)
        if how == "scalar":
            if value is None:
                value = -1 if name in ("starter", "left_by") else 0
            setattr(body, proto_name, value)
        elif how == "repeated":
            getattr(body, proto_name).extend(value or ())
        elif how == "steps":
            getattr(body, proto_name).extend(_steps(value))
        else:
            setattr(body, proto_name, to_proto(value, how))
    if isinstance(event, e.DoubleTaken):  # names the wallet hold the take captures
        body.game_no = match.game_no
    elif isinstance(event, e.BoostApplied):
        body.game_no = match.game_no
        body.boost_no = match.boosts_used[event.seat]
    if isinstance(event, e.GameEnded | e.MatchEnded | e.TableClosed):
        info = match_info(meta, match.options)
        body.info.CopyFrom(info)
        if isinstance(event, e.MatchEnded):
            body.games.extend(_game(info, g) for g in match.games)
    return out


def _game(info: events_pb2.MatchInfo, g: GameRecord) -> events_pb2.GameEnded:
    return events_pb2.GameEnded(
        info=info,
        game_no=g.game_no,
        winner_seat=g.winner,
        result=to_proto(g.result, GameResult),
        points=g.points,
        cube=g.cube,
    )


def view_proto(
    v: PlayerView, meta: TableMeta, seq: int, options: RulesOptions
) -> table_pb2.TableView:
    return table_pb2.TableView(
        table_id=meta["table_id"],
        match_id=meta["match_id"],
        seq=seq,
        seat=v.seat,
        player_ids=meta["player_ids"],
        phase=to_proto(v.phase, Phase),
        turn=v.turn,
        decider=v.decider,
        game_no=v.game_no,
        match_length=v.match_length,
        score=list(v.score),
        crawford=v.crawford,
        position_id=v.position_id,
        own=list(v.own),
        opponent=list(v.opponent),
        pips=list(v.pips),
        dice=list(v.dice or ()),
        steps=_steps(v.steps),
        cube=v.cube,
        cube_owner=v.cube_owner,
        can_double=v.can_double,
        can_confirm=v.can_confirm,
        deadline_ms=v.deadline_ms or 0,
        deadline_kind=to_proto(v.deadline_kind, DeadlineKind),
        clock_ms=v.clock_ms or 0,
        lit=[_lit(k, d) for k, d in v.lit.items()],
        boosts_left=v.boosts_left,
        auto_roll=v.auto_roll,
        away=list(v.away),
        fingerprint=v.fingerprint,
        winner=-1 if v.winner is None else v.winner,
        end_reason=to_proto(v.end_reason, EndReason),
        options=_options_proto(options),
        rematch_offered_by=-1 if v.rematch_offered_by is None else v.rematch_offered_by,
        rematch_agreed=v.rematch_agreed,
        last_result=to_proto(v.last_result, GameResult),
    )


@lru_cache(maxsize=1024)
def _options_proto(options: RulesOptions) -> table_pb2.TableOptions:
    # Every view of a table carries its unchanging options; the message is copied into each
    # view, never changed here.
    return options_to_proto(options)


def _lit(frm: int, dests: tuple[int, ...]) -> table_pb2.LitPoints:
    lit = table_pb2.LitPoints(to=list(dests))
    setattr(lit, "from", frm)  # `from` is a Python keyword
    return lit


_OUTCOME = table_pb2.MatchOutcome.State
_OUTCOME_STATES = {
    OutcomeState.UNKNOWN: _OUTCOME.STATE_UNKNOWN,
    OutcomeState.PLAYING: _OUTCOME.STATE_PLAYING,
    OutcomeState.CLOSED: _OUTCOME.STATE_CLOSED,
    OutcomeState.ENDED: _OUTCOME.STATE_ENDED,
}


def outcome_proto(o: Outcome) -> table_pb2.MatchOutcome:
    return table_pb2.MatchOutcome(
        state=_OUTCOME_STATES[o.state],
        winner_id=o.winner_id,
        cube=o.cube,
        applied_boosts=o.applied_boosts,
    )


def record_proto(r: MatchRecord) -> table_pb2.MatchRecord:
    return table_pb2.MatchRecord(
        table_id=r.table_id,
        match_id=r.match_id,
        player_ids=r.player_ids,
        seed_hex=r.seed_hex,
        fingerprint=r.fingerprint,
        rolls=[table_pb2.Roll(a=a, b=b) for a, b in r.rolls],
        winner=r.winner,
        score=r.score,
        end_reason=to_proto(EndReason(r.end_reason) if r.end_reason else None, EndReason),
    )
