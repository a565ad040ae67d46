"""proto <-> engine: commands in, events and views out."""

from __future__ import annotations

import json
from typing import Any, cast

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2
from engine import commands as c
from engine import events as e
from engine import profiles
from engine.profiles import Level, OptionsError, RulesOptions
from engine.state import MatchState
from engine.view import PlayerView
from services.common.errors import InvalidArgument


def rules_from_proto(opt: table_pb2.TableOptions) -> RulesOptions:
    """Validated engine options; a bad value is an INVALID_ARGUMENT naming the field."""
    try:
        if opt.profile == "wagered":
            return profiles.wagered(opt.match_length or 1, opt.bet, opt.rated)
        if opt.profile == "scored":
            level = opt.level or "players"
            if level not in ("players", "easy", "normal"):
                raise OptionsError("level", f"unknown level {level!r}")
            return profiles.scored(
                opt.match_length or 1, opt.move_time_s or 180, opt.test_game, cast(Level, level)
            )
        if opt.profile == "casual":
            cpu = opt.level or None
            if cpu not in (None, "easy", "normal"):
                raise OptionsError("level", f"unknown CPU level {cpu!r}")
            return profiles.casual(
                opt.match_length or 1,
                gammons=not opt.no_gammons,
                cube=opt.cube,
                crawford=not opt.no_crawford,
                async_mode=opt.async_mode,
                ranked=opt.rated,
                cpu=cpu,  # type: ignore[arg-type]  # checked just above
            )
    except OptionsError as err:
        raise InvalidArgument("INVALID_OPTION", str(err), field=err.field) from None
    raise InvalidArgument("INVALID_OPTION", f"unknown profile {opt.profile!r}", field="profile")


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
    )


def engine_command(cmd: table_pb2.Command, seat: int) -> c.Command:
    kind = cmd.WhichOneof("kind")
    simple: dict[str, type[c.Command]] = {
        "roll": c.Roll, "undo": c.Undo, "confirm": c.Confirm, "offer_double": c.OfferDouble,
        "take": c.Take, "drop": c.Drop, "resign": c.Resign, "leave": c.Leave, "boost": c.Boost,
        "take_back": c.TakeBack, "offer_rematch": c.OfferRematch, "accept_rematch": c.AcceptRematch,
    }  # fmt: skip
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


def match_info(meta: dict[str, Any], o: RulesOptions) -> events_pb2.MatchInfo:
    return events_pb2.MatchInfo(
        profile=o.profile,
        player_ids=meta["player_ids"],
        match_length=o.match_length,
        rated=o.rated,
        bet=o.bet,
        test_game=o.test_game,
        level=o.level,
    )


def table_event(
    event: e.Event, seq: int, meta: dict[str, Any], match: MatchState, now_ms: int
) -> events_pb2.TableEvent:
    out = events_pb2.TableEvent(
        event_id=f"{meta['table_id']}:{seq}",
        table_id=meta["table_id"],
        seq=seq,
        match_id=meta["match_id"],
        at_ms=now_ms,
        type=event.type,
        json=json.dumps(event.to_dict(), default=list),
    )
    info = match_info(meta, match.options)
    if isinstance(event, e.GameEnded):
        out.game_ended.CopyFrom(
            _game(info, event.game_no, event.winner, event.result, event.points, event.cube)
        )
    elif isinstance(event, e.MatchEnded):
        out.match_ended.CopyFrom(
            events_pb2.MatchEnded(
                info=info,
                winner_seat=event.winner,
                reason=event.reason,
                score=list(event.score),
                scored_points=list(event.scored_points),
                games=[
                    _game(info, g.game_no, g.winner, g.result, g.points, g.cube)
                    for g in match.games
                ],
                seed_hex=event.seed_hex,
                fingerprint=event.fingerprint,
            )
        )
    elif isinstance(event, e.TableClosed):
        out.match_closed.CopyFrom(
            events_pb2.MatchClosed(
                info=info,
                reason=event.reason,
                seed_hex=event.seed_hex,
                fingerprint=event.fingerprint,
            )
        )
    return out


def _game(
    info: events_pb2.MatchInfo, no: int, winner: int, result: str, points: int, cube: int
) -> events_pb2.GameEnded:
    return events_pb2.GameEnded(
        info=info, game_no=no, winner_seat=winner, result=result, points=points, cube=cube
    )


def view_proto(
    v: PlayerView, meta: dict[str, Any], seq: int, options: RulesOptions
) -> table_pb2.TableView:
    return table_pb2.TableView(
        table_id=meta["table_id"],
        match_id=meta["match_id"],
        seq=seq,
        seat=v.seat,
        player_ids=meta["player_ids"],
        phase=v.phase,
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
        steps=[table_pb2.Step(**{"from": a, "to": b}) for a, b in v.steps],
        cube=v.cube,
        cube_owner=v.cube_owner,
        can_double=v.can_double,
        can_confirm=v.can_confirm,
        deadline_ms=v.deadline_ms or 0,
        deadline_kind=v.deadline_kind or "",
        lit=[_lit(k, d) for k, d in v.lit.items()],
        boosts_left=v.boosts_left,
        auto_roll=v.auto_roll,
        away=list(v.away),
        fingerprint=v.fingerprint,
        winner=-1 if v.winner is None else v.winner,
        end_reason=v.end_reason or "",
        options=options_to_proto(options),
        rematch_offered_by=-1 if v.rematch_offered_by is None else v.rematch_offered_by,
        rematch_agreed=v.rematch_agreed,
    )


def _lit(frm: int, dests: tuple[int, ...]) -> table_pb2.LitPoints:
    lit = table_pb2.LitPoints(to=list(dests))
    setattr(lit, "from", frm)  # `from` is a Python keyword
    return lit
