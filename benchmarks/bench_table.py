"""Table service under load: two replicas as processes, real Valkey and Tansu, on this machine.

Part 1: 1,000 concurrent casual tables, each played by a client loop (view, then the next
command: roll, the first legal play, confirm) for a fixed time: applied commands per second and
SubmitCommand latency p50/p99.
Part 2: 5,000 wagered tables created as fast as they can be, with the clock scaled by 0.2 so
every turn deadline (46.5 s -> 9.3 s) falls due within the same minute; both replicas' clock
workers fire them. Lateness = when the timeout was applied minus its deadline, read from each
TimedOut event (the first timeout of every table).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2, table_pb2_grpc
from infra.cluster.embedded import free_port, start_tansu, start_valkey
from services.table.adapters.redis_store import TableStore

P = events_pb2.Phase
COMMAND_TABLES = 1000
COMMAND_SECONDS = 15.0
CLOCK_TABLES = 5000
SCALE = "0.2"


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


async def _wait_serving(port: int) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        for _ in range(300):
            try:
                r = await health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(), timeout=1
                )
                if r.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"table replica on {port} did not start")


async def _play_table(
    stub: table_pb2_grpc.TableServiceAsyncStub, table_id: str, until: float, lat: list[float]
) -> int:
    players = ["a-" + table_id, "b-" + table_id]
    done = 0
    while time.monotonic() < until:
        view = await stub.GetView(table_pb2.GetViewRequest(table_id=table_id, player_id=players[0]))
        seat = view.decider
        if seat != 0:
            view = await stub.GetView(
                table_pb2.GetViewRequest(table_id=table_id, player_id=players[seat])
            )
        cmd = table_pb2.Command()
        if view.phase in (P.PHASE_MATCH_OVER, P.PHASE_CLOSED):
            return done
        if view.phase == P.PHASE_AWAIT_ROLL:
            cmd.roll.SetInParent()
        elif view.phase == P.PHASE_MOVING and view.lit:
            first = view.lit[0]
            step = cmd.move
            setattr(step, "from", getattr(first, "from"))
            step.to = first.to[0]
        elif view.phase in (P.PHASE_MOVING, P.PHASE_CONFIRMING, P.PHASE_NO_MOVE):
            cmd.confirm.SetInParent()
        else:
            await asyncio.sleep(0.05)
            continue
        started = time.perf_counter()
        try:
            await stub.SubmitCommand(
                table_pb2.SubmitCommandRequest(
                    table_id=table_id,
                    player_id=players[seat],
                    seat=seat,
                    expected_seq=view.seq,
                    command=cmd,
                )
            )
            lat.append(time.perf_counter() - started)
            done += 1
        except grpc.aio.AioRpcError:
            pass  # a clock moved first: look again
    return done


async def _commands(stubs: list[table_pb2_grpc.TableServiceAsyncStub]) -> None:
    opts = table_pb2.TableOptions(profile="casual", match_length=7)
    sem = asyncio.Semaphore(50)

    async def create(i: int) -> None:
        async with sem:
            await stubs[i % 2].CreateMatch(
                table_pb2.CreateMatchRequest(
                    table_id=f"c{i}",
                    match_id=f"mc{i}",
                    player_ids=[f"a-c{i}", f"b-c{i}"],
                    options=opts,
                )
            )

    await asyncio.gather(*(create(i) for i in range(COMMAND_TABLES)))
    lat: list[float] = []
    started = time.monotonic()
    counts = await asyncio.gather(
        *(
            _play_table(stubs[i % 2], f"c{i}", started + COMMAND_SECONDS, lat)
            for i in range(COMMAND_TABLES)
        )
    )
    elapsed = time.monotonic() - started
    print(
        f"   {COMMAND_TABLES} concurrent tables, 2 replicas: "
        f"{sum(counts) / elapsed:8.0f} applied commands/s"
    )
    print(
        f"   SubmitCommand latency p50 {_pct(lat, 0.5) * 1000:6.1f} ms   "
        f"p99 {_pct(lat, 0.99) * 1000:6.1f} ms"
    )


async def _clocks(stubs: list[table_pb2_grpc.TableServiceAsyncStub], valkey_url: str) -> None:
    import redis.asyncio as redis_asyncio

    opts = table_pb2.TableOptions(profile="wagered", match_length=7, bet=100)
    sem = asyncio.Semaphore(100)

    async def create(i: int) -> None:
        async with sem:
            await stubs[i % 2].CreateMatch(
                table_pb2.CreateMatchRequest(
                    table_id=f"w{i}", match_id=f"mw{i}", player_ids=[f"a{i}", f"b{i}"], options=opts
                )
            )

    started = time.monotonic()
    await asyncio.gather(*(create(i) for i in range(CLOCK_TABLES)))
    created_in = time.monotonic() - started
    await asyncio.sleep(9.3 + 12)  # every first deadline has passed by now
    client = redis_asyncio.Redis.from_url(valkey_url)
    store = TableStore(client)
    lateness: list[float] = []
    missing = 0
    try:
        for i in range(CLOCK_TABLES):
            first = None
            for _seq, data in await store.events(f"w{i}", 0, 40):
                ev = events_pb2.TableEvent()
                ev.ParseFromString(data)
                if ev.WhichOneof("body") == "timed_out":
                    first = ev.timed_out
                    break
            if first is None:
                missing += 1
            else:
                lateness.append((first.now_ms - first.deadline_ms) / 1000)
    finally:
        await client.aclose()
    print(
        f"   {CLOCK_TABLES} tables created in {created_in:.1f} s; "
        "first deadlines due within one minute"
    )
    print(
        f"   clock lateness p50 {_pct(lateness, 0.5) * 1000:6.1f} ms   "
        f"p99 {_pct(lateness, 0.99) * 1000:6.1f} ms"
        f"   max {max(lateness) * 1000:6.1f} ms   missed {missing}"
    )


async def _main(valkey_url: str, ports: list[int]) -> None:
    await asyncio.gather(*(_wait_serving(p) for p in ports))
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{p}") for p in ports]
    stubs = [table_pb2_grpc.TableServiceStub(ch) for ch in channels]
    await _commands(stubs)
    await _clocks(stubs, valkey_url)
    for ch in channels:
        await ch.close(None)


def _replicas(
    valkey_url: str, kafka: str, workdir: Path
) -> tuple[list[int], list[subprocess.Popen[bytes]]]:
    ports = [free_port() for _ in range(2)]
    procs = []
    for i, port in enumerate(ports):
        env = {
            **os.environ,
            "BG_GRPC_PORT": str(port),
            "BG_METRICS_PORT": "0",
            "BG_REDIS_URL": valkey_url,
            "BG_KAFKA_BOOTSTRAP": kafka,
            "BG_CLOCK_SCALE": SCALE,
            "BG_REPLICA": f"table-{i + 1}",
            "BG_LOG_LEVEL": "WARNING",
        }
        with (workdir / f"table-{i}.log").open("wb") as log:
            argv = [sys.executable, "-m", "services.table"]
            procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))
    return ports, procs


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-table-"))
    valkey = start_valkey(workdir / "valkey")
    kafka = start_tansu(workdir / "tansu")
    ports, procs = _replicas(valkey.address, kafka.address, workdir)
    try:
        asyncio.run(_main(valkey.address, ports))
    finally:
        for p in procs:
            p.terminate()
            p.wait(15)
        kafka.stop()
        valkey.stop()
