"""Issue 13 req. 1 and issue 25: the embedded defaults lose nothing a player or a consumer needs.
Valkey (append-only file) is killed with -9 under a running cluster: the table and its events
are intact. Tansu on memory is killed with -9 twice while wagered matches run (it forgets every
message, topic and offset): the outboxes are the durable log, so every match is still settled
once, to the diamond, and archived by the leaderboard, whose boards equal a rebuild from that
archive; and the broker's history stays a few generations long however many periods go by
(services/common/embedded_generations.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import grpc
import pytest
from aiokafka.admin import AIOKafkaAdminClient

from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2, table_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.player import Player
from infra.cluster.runner import Cluster, ClusterConfig
from infra.cluster.status import collect
from services.common.topics import Namespace
from services.contracts.topics import TOPICS
from tests.cluster.boards import assert_boards_equal_a_rebuild
from tests.cluster.drivers import play_tables
from tests.cluster.money import books, settle_down
from tests.cluster.test_chaos import Run
from tests.helpers import retried

pytestmark = pytest.mark.e2e
BET = 100
FUNDS = 100_000
ROTATE_S = 3  # generations turn over several times in the test


async def _kill_and_await_restart(cluster: Cluster, data_dir: Path, name: str) -> None:
    proc = next(p for p in cluster.infra if p.name == name)
    assert proc.pid is not None
    dead = proc.pid
    os.kill(dead, signal.SIGKILL)
    for _ in range(600):  # bounded: ~60 s (SERVING: the part answers what it serves)
        rows = {r["instance"]: r for r in await collect(data_dir)}
        if rows[name]["pid"] != dead and rows[name]["status"] == "SERVING":
            assert rows[name]["restarts"] >= 1
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} did not come back")


async def _generations(bootstrap: str) -> dict[str, int]:
    """How many generations of each logical topic the broker holds now."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    await admin.start()
    try:
        topics = await admin.list_topics()
    finally:
        await admin.close()
    return {t: len(Namespace().generations(t, topics)) for t in TOPICS}


async def test_valkey_and_kafka_killed_lose_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BG_CLOCK_SCALE", "0.05")
    monkeypatch.setenv("BG_KAFKA_ROTATE_S", str(ROTATE_S))
    monkeypatch.setenv("BG_LOG_LEVEL", "WARNING")
    data = tmp_path / "data"
    log = (tmp_path / "cluster.log").open("w")
    cluster = Cluster(ClusterConfig(replicas={"table": 1}, data_dir=data, base_port=0), log)
    await cluster.start()
    gateway = next(i.address for i in cluster.instances if i.service == "gateway")
    channels = [grpc.aio.insecure_channel(gateway) for _ in range(4)]
    stop = asyncio.Event()
    drivers: list[asyncio.Task[None]] = []
    try:
        a, b = Player(channels[0], "dura-a", seed=1), Player(channels[1], "dura-b", seed=2)
        await a.login()
        await b.login()
        table = await a.create_table(table_pb2.TableOptions(profile="casual", match_length=3))
        await b.join(table.code)
        await a.rpc(a.stub.StartTable, matchmaking_pb2.TableRequest(table_id=table.table_id))
        before = await a.view(table.table_id)
        assert before.seq > 0

        await _kill_and_await_restart(cluster, data, "valkey")
        after = await retried(lambda: a.view(table.table_id), time.monotonic() + 30)
        assert after.seq == before.seq and after.position_id == before.position_id
        lobby = await retried(lambda: b.table(table.table_id), time.monotonic() + 30)
        assert lobby.table_id == table.table_id

        # Wagered play through two broker kills (each forgets everything it held).
        tag = uuid.uuid4().hex[:6]
        players = [Player(channels[2 + i], f"dura{tag}{i}", seed=10 + i) for i in range(2)]
        for p in players:
            await p.login()
        wallet_address = next(i.address for i in cluster.instances if i.service == "wallet")
        async with grpc.aio.insecure_channel(wallet_address) as wch:
            wallet = wallet_pb2_grpc.WalletServiceStub(wch)
            for p in players:
                await wallet.Deposit(
                    wallet_pb2.DepositRequest(
                        idempotency_key=f"fund:{p.player_id}", player_id=p.player_id, amount=FUNDS
                    ),
                    metadata=[("x-operator-token", cluster.operator_token)],
                )
        run = Run()
        drivers.append(
            asyncio.create_task(play_tables(players, "wagered", BET, stop, run.tables, run.failed))
        )
        await asyncio.sleep(2 * ROTATE_S)
        for _ in range(2):
            await _kill_and_await_restart(cluster, data, "kafka")
            await asyncio.sleep(2 * ROTATE_S)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*drivers, return_exceptions=True), 90)

        # Every match settled once, to the diamond, though the broker forgot twice.
        wallet_url = f"sqlite+aiosqlite:///{data / 'wallet.db'}"
        assert await settle_down(wallet_url, time.monotonic() + 120) == (0, 0)
        tables = table_pb2_grpc.TableServiceStub(
            grpc.aio.insecure_channel(
                next(i.address for i in cluster.instances if i.service == "table")
            )
        )
        ledger = await books(wallet_url, tables, {p.player_id: FUNDS for p in players}, BET)
        settled = [e for e in ledger.closed if e.status == "settled"]
        assert len(settled) >= 2, "too few matches to prove anything"
        for p in players:
            assert await retried(p.balance, time.monotonic() + 30) == ledger.expected[p.player_id]
        # ... and archived by the leaderboard, whose boards are its archive's.
        for e in settled:
            archived = await retried(
                lambda m=e.match_id: players[0].rpc(
                    players[0].stub.GetArchivedMatch,
                    leaderboard_pb2.ArchivedMatchRequest(match_id=m),
                ),
                time.monotonic() + 60,
            )
            assert archived.moves and archived.seed_hex
        await assert_boards_equal_a_rebuild(
            data / "leaderboard.db", tmp_path, cluster.redis_url, [p.player_id for p in players]
        )
        # The broker keeps a few generations, not the whole run's (at 3 s a period, a
        # generation lives its two periods and two delivery slacks of 15 s: about a dozen).
        generations = await retried(
            lambda: _generations(cluster.kafka_bootstrap), time.monotonic() + 30
        )
        assert all(1 <= n <= 16 for n in generations.values()), generations
    finally:
        stop.set()
        for task in drivers:
            task.cancel()
        for ch in channels:
            await ch.close(None)
        await cluster.stop()
        log.close()
