"""A table's options as the protos carry them, validated into the engine's rules: one function
that matchmaking (at once, for a clean error at creation) and the table service (at the deal)
both use."""

from __future__ import annotations

from typing import cast

from bg.table.v1 import table_pb2
from engine import profiles
from engine.profiles import CPU_LEVELS, Level, OptionsError, RulesOptions
from services.common.errors import InvalidArgument


def rules_from_proto(opt: table_pb2.TableOptions) -> RulesOptions:
    """Validated engine options; a bad value is an INVALID_ARGUMENT naming the field."""
    try:
        rules = _rules(opt)
        return profiles.tournament_match(rules) if opt.tournament else rules
    except OptionsError as err:
        raise InvalidArgument("INVALID_OPTION", str(err), field=err.field) from None


def _rules(opt: table_pb2.TableOptions) -> RulesOptions:
    if opt.profile == "wagered":
        return profiles.wagered(opt.match_length or 1, opt.bet, opt.rated, opt.tournament)
    if opt.profile == "scored":
        level = opt.level or "players"
        if level != "players" and level not in CPU_LEVELS:
            raise OptionsError("level", f"unknown level {level!r}")
        return profiles.scored(
            opt.match_length or 1, opt.move_time_s or 180, opt.test_game, cast(Level, level)
        )
    if opt.profile == "casual":
        cpu = opt.level or None
        if cpu is not None and cpu not in CPU_LEVELS:
            raise OptionsError("level", f"unknown CPU level {cpu!r}")
        return profiles.casual(
            opt.match_length or 1,
            gammons=not opt.no_gammons,
            cube=opt.cube,
            crawford=not opt.no_crawford,
            async_mode=opt.async_mode,
            ranked=opt.rated,
            cpu=cpu,
        )
    raise OptionsError("profile", f"unknown profile {opt.profile!r}")


def player_options(opt: table_pb2.TableOptions) -> RulesOptions:
    """A table a player opens (CreateTable, QuickMatch): validated, and never a tournament's."""
    if opt.tournament:
        raise InvalidArgument(
            "INVALID_OPTION", "only a tournament's director deals its matches", field="tournament"
        )
    return rules_from_proto(opt)
