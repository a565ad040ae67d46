"""Bots playing whole matches through the table core (as clients would, by player and seat)."""

from __future__ import annotations

import asyncio
import random

from bg.table.v1 import table_pb2
from engine import bots
from engine import commands as c
from engine.position import Position
from engine.profiles import RulesOptions
from services.contracts.table_options import rules_from_proto
from services.table.adapters.redis_store import TableStore
from services.table.ports import TableRepository
from services.table.table_core import Rejected, TableCore
from tests.table.memory_store import MemoryTableStore


async def deal(
    core: TableCore, table_id: str, match_id: str, players: list[str], rules: RulesOptions
) -> tuple[str, int, bool]:
    """A match whose players are connected, as their Play streams report them (I-41: a player
    with no stream is away from the deal)."""
    made = await core.create_match(table_id, match_id, players, rules)
    for player in players:
        await core.presence(table_id, player, connected=True)
    return made


async def play(
    core: TableCore, table_id: str, players: list[str], rng: random.Random, budget: int = 4000
) -> str:
    """Play until the match is over (waiting for the clock between games); returns the phase."""
    for _ in range(budget):
        loaded, view = await core.view(table_id, players[0])
        m = loaded.state.match
        if m.finished:
            return m.phase.value
        seat = view.decider
        player = players[seat]
        _, v = await core.view(table_id, player)
        cmd: c.Command | None = None
        if v.phase == "await_roll":
            pos = Position(v.own, v.opponent)
            cmd = (
                c.OfferDouble(seat)
                if v.can_double and bots.cube_advice(pos).double
                else c.Roll(seat)
            )
        elif v.phase == "double_offered":
            doubler = Position(v.opponent, v.own)
            cmd = c.Take(seat) if bots.cube_advice(doubler).take else c.Drop(seat)
        elif v.phase == "moving" and v.dice:
            start = m.play.start if m.play else Position(v.own, v.opponent)
            choice = bots.normal_bot(start, (v.dice[0], v.dice[1]), rng)
            cmd = c.SubmitPlay(seat, choice.steps) if choice else c.Confirm(seat)
        elif v.phase in ("confirming", "no_move"):
            cmd = c.Confirm(seat)
        if cmd is None:
            await asyncio.sleep(0.01)  # between games: the clock deals the next one
            continue
        try:
            await core.submit(table_id, player, seat, "", loaded.seq, cmd)
        except Rejected:
            pass  # the clock moved first (stale seq or a timeout): look again
        except Exception as err:  # STALE_SEQ is a ServiceError: look again
            if getattr(err, "code", "") != "STALE_SEQ":
                raise
    raise AssertionError("match did not finish")


def options(profile: str, **kw: object) -> RulesOptions:
    """A table's rules, as the table service reads them from CreateMatch's options."""
    return rules_from_proto(table_pb2.TableOptions(profile=profile, **kw))  # type: ignore[arg-type]


async def deadline_of(store: TableRepository, table_id: str) -> int | None:
    """The table's scheduled deadline, read off either store (the core never asks for it: the
    clock worker reads the shard sets)."""
    assert isinstance(store, MemoryTableStore | TableStore), store
    return await store.deadline(table_id)


def redis_store(core: TableCore) -> TableStore:
    """A core's store when it is the Redis one (the clock worker and the relay work on it)."""
    assert isinstance(core.store, TableStore), core.store
    return core.store
