"""Issue 42, requirement 3 (RULES.md I-40): one reference time, the store's. A table replica's
estimate of Valkey's clock is a lower bound whatever its own wall clock says; the commit script
refuses a time ahead of its TIME (a timeout would fire early) or trailing it too far; a replica
whose wall clock is skewed +-2 s or +-30 s (BG_CLOCK_SKEW_MS, a real process) fires every
timeout at or after its deadline by the store's clock, and not 30 s off."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc
import pytest
import redis.asyncio as redis_asyncio

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2, table_pb2_grpc
from engine.state import TableState
from services.common.store_clock import StoreClock, redis_times
from services.table.adapters.redis_store import CLOCK_MAX_BEHIND_MS, TableStore
from services.table.ports import Commit, CommitStatus
from services.table.table_core import TableCore
from tests.helpers import Valkey
from tests.table.driver import options
from tests.table.fakes import FakeWallet
from tests.table.test_replicas import _serving

pytestmark = pytest.mark.integration
P = ["alice", "bob"]


class Store:
    """A store clock read over a network: each TIME takes `rtt` seconds of the local clock and
    reads the store's time at `at` (0..1) of the way through."""

    def __init__(self, store_ms: int) -> None:
        self.local = 100.0  # the replica's monotonic clock, seconds
        self.store_ms = store_ms  # the store's clock at local 100.0
        self.rtts = [0.004, 0.001, 0.003]
        self.at = 0.5
        self.reads = 0

    def clock(self) -> float:
        return self.local

    def store_at(self, local: float) -> int:
        return self.store_ms + int((local - 100.0) * 1000)

    async def read(self) -> list[int]:
        rtt = self.rtts[self.reads % len(self.rtts)]
        self.reads += 1
        self.local += rtt * self.at
        seen = self.store_at(self.local)
        self.local += rtt * (1 - self.at)
        return [seen, seen + 7]  # two primaries, the second 7 ms ahead: the least counts


async def test_the_estimate_trails_the_store_by_at_most_a_round_trip_never_ahead() -> None:
    store = Store(store_ms=1_800_000_000_000)
    clock = StoreClock(store.read, local=store.clock, samples=3)
    await clock.sync()
    assert clock.synced and abs(clock.rtt_ms - 1.0) < 1e-6  # the shortest of the three
    for step in (0.0, 0.25, 10.0, 3600.0):
        store.local += step
        truth = store.store_at(store.local)
        # Within the shortest round trip (1 ms) and the milliseconds cut off, never ahead.
        assert truth - 3 <= clock() <= truth
    before = clock()
    clock.seen(store.store_at(store.local) - 500)  # an older reading moves nothing back
    assert clock() == before
    clock.stalled()
    assert not clock.synced
    await clock.sync()
    assert clock() <= store.store_at(store.local)


async def test_the_commit_refuses_a_time_ahead_of_the_store_or_too_far_behind(
    redis: redis_asyncio.Redis,
) -> None:
    core = TableCore(TableStore(redis), FakeWallet())
    await core.create_match("c1", "m1", P, options("casual"))
    loaded = await core.store.load("c1")
    assert loaded is not None
    store_ms = min(await redis_times(redis)())  # one Valkey, or each primary of a cluster

    def commit(now: int) -> Commit:
        state: TableState = loaded.state
        return Commit("c1", loaded.seq, state, None, "", [b"x"], now, kinds=["test"])

    for now, status in (
        (store_ms + 5_000, CommitStatus.CLOCK_AHEAD),
        (store_ms - CLOCK_MAX_BEHIND_MS - 5_000, CommitStatus.CLOCK_BEHIND),
    ):
        result = await core.store.commit(commit(now))
        assert result.status is status and result.seq >= store_ms
    after = await core.store.load("c1")
    assert after is not None and after.seq == loaded.seq  # nothing written


async def test_a_core_on_a_fast_wall_clock_is_fenced_and_one_on_the_store_clock_is_not(
    redis: redis_asyncio.Redis,
) -> None:
    """The old way (each replica's own wall clock) 2 s fast: its commits are refused, so it
    can fire nothing early; on the store's clock the same replica plays on."""
    fast = TableCore(TableStore(redis), FakeWallet(), now=lambda: int(time.time() * 1000) + 2000)
    with pytest.raises(Exception) as busy:
        await fast.create_match("f1", "m1", P, options("casual"))
    assert getattr(busy.value, "code", "") == "BUSY"
    assert await fast.store.load("f1") is None
    assert fast.metrics.clock_refusals.labels("CLOCK_AHEAD")._value.get() > 0
    store_clock = StoreClock(redis_times(redis))
    await store_clock.sync()
    steady = TableCore(TableStore(redis), FakeWallet(), now=store_clock)
    await steady.create_match("f1", "m1", P, options("casual"))
    assert await steady.store.load("f1") is not None


def _spawn(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "services.table"],
        env={**os.environ, **env}, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip


@pytest.mark.parametrize("skew_ms", [2_000, -2_000, 30_000, -30_000])
async def test_a_replica_with_a_skewed_clock_fires_no_timeout_early(
    tmp_path: Path, valkey: Valkey, redis: redis_asyncio.Redis, skew_ms: int
) -> None:
    """One table replica, its wall clock skewed (BG_CLOCK_SKEW_MS), fires the turn clocks of a
    few idle wagered tables (x0.01: 0.47 s each): every timeout at or after its deadline by
    Valkey's clock, and its time, as the events carry it, never ahead of Valkey's and not off
    by the skew."""
    from infra.cluster.embedded import free_port

    port = free_port()
    env = {
        "BG_GRPC_PORT": str(port), "BG_METRICS_PORT": "0", **valkey.env,
        "BG_KAFKA_BOOTSTRAP": "127.0.0.1:1", "BG_TABLE_RELAY": "false",
        "BG_CLOCK_SCALE": "0.01", "BG_CLOCK_SKEW_MS": str(skew_ms),
        "BG_REPLICA": f"skewed-{uuid.uuid4().hex[:4]}",
        "BG_WALLET_ADDR": f"127.0.0.1:{free_port()}", "BG_LOG_FORMAT": "text",
    }  # fmt: skip
    proc = _spawn(env, tmp_path / "table.log")
    tables = [f"s{uuid.uuid4().hex[:8]}" for _ in range(4)]
    store = TableStore(redis)
    read_time = redis_times(redis)
    try:
        await _serving(port)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = table_pb2_grpc.TableServiceStub(ch)
            for t in tables:
                await stub.CreateMatch(
                    table_pb2.CreateMatchRequest(
                        table_id=t, match_id=f"m-{t}", player_ids=P,
                        options=table_pb2.TableOptions(
                            profile="wagered", match_length=3, bet=100
                        ),
                    )
                )  # fmt: skip
                for player in P:  # both at the table: only the turn clocks act
                    await stub.SetPresence(
                        table_pb2.SetPresenceRequest(table_id=t, player_id=player, connected=True)
                    )
        seen: dict[str, list[events_pb2.TimedOut]] = {t: [] for t in tables}
        for _ in range(200):
            read = {t: await store.events(t, 0, 10_000) for t in tables}
            store_now = max(await read_time())  # after the events: each was committed before
            for t in tables:
                for _seq, data in read[t]:
                    ev = events_pb2.TableEvent()
                    ev.ParseFromString(data)
                    if ev.WhichOneof("body") != "timed_out":
                        continue
                    if any(x.now_ms == ev.timed_out.now_ms for x in seen[t]):
                        continue
                    seen[t].append(ev.timed_out)
                    # Never early by the store's clock, never ahead of it, not off by the skew.
                    assert ev.timed_out.now_ms >= ev.timed_out.deadline_ms, ev
                    assert ev.timed_out.now_ms <= store_now, (ev.timed_out.now_ms, store_now)
                    assert store_now - ev.timed_out.now_ms < 1_500, (ev, store_now)
            if all(len(v) >= 3 for v in seen.values()):
                break
            await asyncio.sleep(0.05)
        assert all(len(v) >= 3 for v in seen.values()), {t: len(v) for t, v in seen.items()}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
