"""Several replicas on one table: no double application, no lost update, every timeout once;
a replica killed with SIGKILL mid-match loses nothing (real processes, Valkey and Tansu)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import grpc
import pytest
import redis.asyncio as redis_asyncio
from aiokafka import AIOKafkaConsumer

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2, table_pb2_grpc
from engine import commands as c
from infra.cluster.embedded import free_port
from services.common.errors import ServiceError
from services.contracts.event_records import table_events
from services.contracts.topics import TABLE_EVENTS
from services.table.adapters.redis_store import TableStore
from services.table.clock import ClockWorker
from services.table.table_core import TableCore
from tests.helpers import Valkey, assert_no_turn_timed_out_twice, kind, load_table, stored_events
from tests.table.driver import options, redis_store
from tests.table.fakes import FakeWallet

pytestmark = pytest.mark.integration
P = ["alice", "bob"]


async def test_two_replicas_racing_the_same_commands(
    valkey: Valkey, redis: redis_asyncio.Redis
) -> None:
    clients = [valkey.client() for _ in range(2)]
    cores = [TableCore(TableStore(cl), FakeWallet()) for cl in clients]
    try:
        await cores[0].create_match("t1", "m1", P, options("casual", match_length=1))
        loaded = await cores[0].store.load("t1")
        assert loaded is not None
        m = loaded.state.match
        assert m.play is not None
        steps = m.play.plays[0].steps
        seat = m.turn
        # The same command id sent to both replicas at once: applied once, both get the result.
        results = await asyncio.gather(
            *(
                core.submit("t1", P[seat], seat, "same", 0, c.SubmitPlay(seat, steps))
                for core in cores
            )
        )
        assert sorted(r.duplicate for r in results) == [False, True]
        assert results[0].seq == results[1].seq
        # Different commands racing for one turn: exactly one wins, the other is refused.
        nxt = await cores[0].store.load("t1")
        assert nxt is not None
        other = nxt.state.match.turn
        outcomes = await asyncio.gather(
            cores[0].submit("t1", P[other], other, "", nxt.seq, c.Roll(other)),
            cores[1].submit("t1", P[other], other, "", nxt.seq, c.Roll(other)),
            return_exceptions=True,
        )
        ok = [o for o in outcomes if not isinstance(o, BaseException)]
        refused = [o for o in outcomes if isinstance(o, ServiceError)]
        assert (
            len(ok) == 1 and len(refused) == 1 and refused[0].code in ("STALE_SEQ", "WRONG_PHASE")
        )
        final = await cores[0].store.load("t1")
        assert final is not None
        seqs = [s for s, _ in await cores[0].store.events("t1", 0, 10_000)]
        assert seqs == list(range(1, final.seq + 1))
        assert final.state.match.rolls.count(final.state.match.dice) >= 1
    finally:
        for cl in clients:
            await cl.aclose()


async def test_two_clock_workers_fire_each_deadline_once(
    valkey: Valkey, redis: redis_asyncio.Redis
) -> None:
    clients = [valkey.client() for _ in range(3)]
    cores = [TableCore(TableStore(cl), FakeWallet(), clock_scale=0.001) for cl in clients]
    stop = asyncio.Event()
    workers = [
        asyncio.create_task(ClockWorker(redis_store(core), core).run(stop)) for core in cores[1:]
    ]
    try:
        tables = [f"t{i}" for i in range(20)]
        for t in tables:
            await cores[0].create_match(t, f"m-{t}", P, options("wagered", match_length=1, bet=100))
        for _ in range(1500):
            done = 0
            for t in tables:
                loaded = await cores[0].store.load(t)
                done += bool(loaded and loaded.state.match.finished)
            if done == len(tables):
                break
            await asyncio.sleep(0.05)
        assert done == len(tables)
    finally:
        stop.set()
        await asyncio.gather(*workers)
    for t in tables:
        events = await stored_events(cores[0].store, t)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert_no_turn_timed_out_twice(t, events)
    for cl in clients:
        await cl.aclose()


def _spawn(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "services.table"],
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def _serving(port: int) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        for _ in range(300):
            try:
                reply = await health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(), timeout=1
                )
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("replica not serving")


async def test_kill_9_one_replica_mid_match(
    tmp_path: Path, valkey: Valkey, kafka_bootstrap: str, redis: redis_asyncio.Redis
) -> None:
    """Deadlines pending on replica A when it dies: B fires them; matches finish; every event
    reaches Kafka in order per table."""
    ports = [free_port() for _ in range(2)]
    run = uuid.uuid4().hex[:6]
    procs = []
    for i, port in enumerate(ports):
        env = {
            "BG_GRPC_PORT": str(port), "BG_METRICS_PORT": "0", **valkey.env,
            "BG_KAFKA_BOOTSTRAP": kafka_bootstrap, "BG_CLOCK_SCALE": "0.001",
            "BG_REPLICA": f"table-{i + 1}",
            "BG_WALLET_ADDR": f"127.0.0.1:{free_port()}", "BG_LOG_FORMAT": "text",
        }  # fmt: skip
        procs.append(_spawn(env, tmp_path / f"table-{i}.log"))
    try:
        await asyncio.gather(*(_serving(p) for p in ports))
        tables = [f"k{run}-{i}" for i in range(12)]
        scored = table_pb2.TableOptions(profile="scored", match_length=1, move_time_s=600)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{ports[0]}") as ch:
            stub = table_pb2_grpc.TableServiceStub(ch)
            for t in tables:
                await stub.CreateMatch(
                    table_pb2.CreateMatchRequest(
                        table_id=t, match_id=f"m-{t}", player_ids=P,
                        options=scored,
                    )
                )  # fmt: skip
                for player in P:  # connected, as their Play streams report (I-41)
                    await stub.SetPresence(
                        table_pb2.SetPresenceRequest(table_id=t, player_id=player, connected=True)
                    )
        await asyncio.sleep(0.05)
        procs[0].send_signal(signal.SIGKILL)  # A dies with every deadline pending
        procs[0].wait(10)
        store = TableStore(redis)
        for _ in range(600):
            states = [await store.load(t) for t in tables]
            if all(s and s.state.match.finished for s in states):
                break
            await asyncio.sleep(0.05)
        assert all(s and s.state.match.finished for s in states)
        # Each table: one warning and one move-time timeout, never two.
        for t in tables:
            types = []
            for _, data in await store.events(t, 0, 10_000):
                ev = events_pb2.TableEvent()
                ev.ParseFromString(data)
                types.append(kind(ev))
            assert types.count("timed_out") == 1 and types.count("match_ended") == 1, types
        # The relay (B's, since A died) puts every event on Kafka, in order per table.
        consumer = AIOKafkaConsumer(
            TABLE_EVENTS,
            bootstrap_servers=kafka_bootstrap,
            group_id=f"check-{run}",
            auto_offset_reset="earliest",
        )
        await consumer.start()
        seen: dict[str, list[int]] = {t: [] for t in tables}
        try:
            for _ in range(120):
                batch = await consumer.getmany(timeout_ms=500)
                for records in batch.values():
                    for record in records:
                        for ev in table_events(record.value, record.headers):
                            if ev.table_id in seen:
                                assert record.key == ev.table_id.encode()
                                seen[ev.table_id].append(ev.seq)
                expected = {t: (await load_table(store, t)).seq for t in tables}
                if all(set(seen[t]) >= set(range(1, expected[t] + 1)) for t in tables):
                    break
        finally:
            await consumer.stop()
        for t in tables:
            deduped: list[int] = []
            for s in seen[t]:
                if s not in deduped:
                    deduped.append(s)
            assert deduped == list(range(1, expected[t] + 1)), (t, seen[t])
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(10)
