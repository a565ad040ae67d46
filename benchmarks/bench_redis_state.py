"""Redis memory per live table, and what a finished match leaves in Redis after its grace period.

Live: N casual tables dealt through the table core on a real Valkey (state, stream, clock entry):
used_memory grown per table, and keys per table. Finished: M casual matches played to the end by
the engine's bots through the table core, then relayed (a stub Kafka acknowledges every send):
bytes per finished match during the grace period, and after it, counting every key that has no
expiry or expires later than the grace (goal: 0). Nothing is timed here; the figures are sizes.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import tempfile
from pathlib import Path
from typing import Any

import redis.asyncio as redis_asyncio

from bg.table.v1 import table_pb2
from engine import bots
from engine import commands as c
from engine.position import Position
from infra.cluster.embedded import start_valkey
from services.common.errors import ServiceError
from services.contracts.redis_keys import clocks_key, relay_key
from services.contracts.shards import shard_of
from services.contracts.table_options import rules_from_proto
from services.table.adapters.redis_store import FINISHED_TTL_S, TableStore
from services.table.relay import EventRelay
from services.table.table_core import TableCore
from tests.table.driver import redis_store
from tests.table.fakes import FakePublisher

LIVE = 200
FINISHED = 40
P = ["ann", "bob"]


class NoWallet:
    """The casual tables measured here move no diamonds: any wallet call is refused loudly."""

    async def hold_raise(self, key: str, match_id: str, cube: int) -> None:
        raise ServiceError("NO_WALLET", "this table has no wallet")

    async def hold_spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> None:
        raise ServiceError("NO_WALLET", "this table has no wallet")

    async def capture(self, hold_key: str) -> None:
        raise ServiceError("NO_WALLET", "this table has no wallet")


async def _play(core: TableCore, table_id: str, rng: random.Random) -> None:
    for _ in range(3000):
        loaded, view = await core.view(table_id, P[0])
        m = loaded.state.match
        if m.finished:
            return
        seat = view.decider
        _, v = await core.view(table_id, P[seat])
        cmd: c.Command | None = None
        if v.phase == "await_roll":
            cmd = c.Roll(seat)
        elif v.phase == "moving" and v.dice:
            start = m.play.start if m.play else Position(v.own, v.opponent)
            choice = bots.normal_bot(start, (v.dice[0], v.dice[1]), rng)
            cmd = c.SubmitPlay(seat, choice.steps) if choice else c.Confirm(seat)
        elif v.phase in ("confirming", "no_move"):
            cmd = c.Confirm(seat)
        if cmd is None:
            await asyncio.sleep(0.005)
            continue
        with contextlib.suppress(Exception):  # the clock moved first: look again
            await core.submit(table_id, P[seat], seat, "", loaded.seq, cmd)
    raise AssertionError(f"{table_id} did not finish")


async def _keys(redis: Any, prefix: str) -> list[bytes]:
    return [k async for k in redis.scan_iter(match=f"*{prefix}*", count=1000)]


async def _main(url: str) -> None:
    redis = redis_asyncio.Redis.from_url(url)
    core = TableCore(TableStore(redis), NoWallet(), clock_scale=0.001)
    casual = rules_from_proto(table_pb2.TableOptions(profile="casual", match_length=1))
    before = int((await redis.info("memory"))["used_memory"])
    for i in range(LIVE):
        await core.create_match(f"live{i}", f"live{i}-1", P, casual)
    grown = int((await redis.info("memory"))["used_memory"]) - before
    live_keys = len(await _keys(redis, "live"))
    print(
        f"   live table: {grown / LIVE:8.0f} bytes of used_memory each, "
        f"{live_keys / LIVE:.0f} keys each ({LIVE} tables dealt, no move yet)"
    )

    rng = random.Random(7)
    for i in range(FINISHED):
        await core.create_match(f"done{i}", f"done{i}-1", P, casual)
        await _play(core, f"done{i}", rng)
    relay = EventRelay(redis_store(core), FakePublisher())
    while await relay.run_once():
        pass
    keys = await _keys(redis, "done")
    during = left = 0
    for key in keys:
        size = int(await redis.memory_usage(key) or 0)
        during += size
        ttl = int(await redis.ttl(key))
        if ttl == -1 or ttl > FINISHED_TTL_S:
            left += size
    leftovers = [
        await redis.zscore(key(shard_of(f"done{i}")), f"done{i}")
        for key in (clocks_key, relay_key)
        for i in range(FINISHED)
    ]
    print(
        f"   finished match: {during / FINISHED:8.0f} bytes each during the {FINISHED_TTL_S} s "
        f"grace ({len(keys) / FINISHED:.0f} keys, all expiring), {left / FINISHED:.0f} bytes "
        f"each after it (goal 0); clock and relay entries left: "
        f"{sum(x is not None for x in leftovers)}"
    )
    await redis.aclose()


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    valkey = start_valkey(workdir / "valkey")
    try:
        asyncio.run(_main(valkey.address))
    finally:
        valkey.stop()
