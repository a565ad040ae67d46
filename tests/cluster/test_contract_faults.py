"""Issue 24, items 10 and 11 as fault tests: while wagered matches run through the gateway on a
cluster with its ledger on PostgreSQL and Kafka on SeaweedFS (`--kafka-storage s3`), kill -9
PostgreSQL, then
SeaweedFS. While PostgreSQL is gone or in crash recovery every wallet call answers UNAVAILABLE,
never UNKNOWN (docs/protocol.md, "Errors"); while SeaweedFS stores nothing `bgcluster status`
says it is not serving, and says SERVING only once an object can be written and read back again;
the supervisor's banner says when. Afterwards the books balance to the diamond: every escrow
closed once, as its table's outcome says (tests/cluster/money.py). Item 9's lost answers are in
test_contract.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

import grpc
import pytest

from bg.table.v1 import table_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.player import Player
from infra.cluster.runner import Cluster, ClusterConfig
from infra.cluster.status import collect
from tests.cluster.drivers import play_tables
from tests.cluster.money import books, settle_down
from tests.cluster.test_chaos import Run
from tests.helpers import retried

pytestmark = pytest.mark.e2e
PAIRS = 3
BET = 100
FUNDS = 100_000
SECONDS = 4.0  # of play after each part serves again
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


def _s3_stores(url: str) -> bool:
    """An S3 object written and read back, independently of bgcluster's own check."""
    key = f"{url}/contract-probe-{uuid.uuid4().hex[:6]}"
    try:
        for method, path, body in (("PUT", key, None), ("PUT", f"{key}/o", b"x")):
            request = urllib.request.Request(path, data=body, method=method)
            try:
                urllib.request.urlopen(request, timeout=2).close()
            except urllib.error.HTTPError as exc:
                if exc.code != 409:
                    return False
        with urllib.request.urlopen(f"{key}/o", timeout=2) as reply:
            return bool(reply.read() == b"x")
    except OSError:
        return False


async def _statuses_until_serving(data: Path, name: str, dead: int, until: float) -> list[str]:
    """The part's status, sampled until it is SERVING under a new pid."""
    seen: list[str] = []
    while time.monotonic() < until:
        row = next(r for r in await collect(data) if r["instance"] == name)
        seen.append(row["status"])
        if row["pid"] != dead and row["status"] == "SERVING":
            return seen
        await asyncio.sleep(0.2)
    raise AssertionError(f"{name} was not SERVING again: {seen[-5:]}")


async def test_postgres_and_seaweedfs_killed_under_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BG_CLOCK_SCALE", "0.05")
    monkeypatch.setenv("BG_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("BG_WALLET_ESCROW_BOUND_S", "15")
    monkeypatch.setenv("BG_WALLET_RECONCILE_INTERVAL_S", "1")
    data = tmp_path / "data"
    log_path = tmp_path / "cluster.log"
    log = log_path.open("w")
    config = ClusterConfig(
        replicas={"table": 2}, data_dir=data, base_port=0, postgres=True, kafka_storage="s3"
    )
    cluster = Cluster(config, log)
    await cluster.start()
    gateway = next(i.address for i in cluster.instances if i.service == "gateway")
    wallet_address = next(i.address for i in cluster.instances if i.service == "wallet")
    channels = [grpc.aio.insecure_channel(gateway, options=OPTIONS) for _ in range(2 * PAIRS)]
    stop = asyncio.Event()
    drivers: list[asyncio.Task[None]] = []
    codes: Counter[str] = Counter()  # the wallet's answers to the poller, by status
    try:
        tag = uuid.uuid4().hex[:6]
        players = [Player(ch, f"pgkill{tag}{i}", seed=i) for i, ch in enumerate(channels)]
        for p in players:
            await p.login()
        wallet_channel = grpc.aio.insecure_channel(wallet_address)
        wallet = wallet_pb2_grpc.WalletServiceStub(wallet_channel)
        for p in players:
            await wallet.Deposit(
                wallet_pb2.DepositRequest(
                    idempotency_key=f"fund:{p.player_id}", player_id=p.player_id, amount=FUNDS
                ),
                metadata=[("x-operator-token", cluster.operator_token)],
            )

        async def poll_wallet() -> None:
            while not stop.is_set():
                try:
                    await wallet.GetBalance(
                        wallet_pb2.GetBalanceRequest(player_id=players[0].player_id), timeout=5
                    )
                    codes["OK"] += 1
                except grpc.aio.AioRpcError as exc:
                    codes[exc.code().name] += 1
                await asyncio.sleep(0.05)

        run = Run()
        pairs = [players[i : i + 2] for i in range(0, len(players), 2)]
        drivers = [
            asyncio.create_task(play_tables(pair, "wagered", BET, stop, run.tables, run.failed))
            for pair in pairs
        ]
        drivers.append(asyncio.create_task(poll_wallet()))
        await asyncio.sleep(SECONDS)

        # PostgreSQL: kill -9, crash recovery on restart; the wallet answers UNAVAILABLE.
        dead = next(p.pid for p in cluster.infra if p.name == "postgres")
        assert dead is not None
        before = Counter(codes)
        os.kill(dead, signal.SIGKILL)
        postgres_seen = await _statuses_until_serving(data, "postgres", dead, time.monotonic() + 90)
        await asyncio.sleep(SECONDS)
        during = codes - before
        assert "UNKNOWN" not in codes, codes
        assert during["UNAVAILABLE"] >= 1, during  # the fault was met, and answered retryably

        # SeaweedFS: kill -9; it runs again long before it stores: status must say so.
        s3 = cluster.infra_addresses["seaweedfs"]
        dead = next(p.pid for p in cluster.infra if p.name == "seaweedfs")
        assert dead is not None
        os.kill(dead, signal.SIGKILL)
        seaweed_seen = await _statuses_until_serving(
            data, "seaweedfs", dead, time.monotonic() + 120
        )
        assert {"DEAD", "NOT_SERVING"} & set(seaweed_seen), seaweed_seen
        assert await asyncio.to_thread(_s3_stores, s3)  # SERVING means it stores
        await asyncio.sleep(SECONDS)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*drivers, return_exceptions=True), 90)
        assert "UNKNOWN" not in codes, codes

        # The books, to the diamond.
        wallet_url = f"{cluster.postgres_url}/wallet"
        assert await settle_down(wallet_url, time.monotonic() + 120) == (0, 0)
        table = table_pb2_grpc.TableServiceStub(
            grpc.aio.insecure_channel(
                next(i.address for i in cluster.instances if i.service == "table")
            )
        )
        ledger = await books(wallet_url, table, {p.player_id: FUNDS for p in players}, BET)
        assert ledger.closed, "no wagered match was dealt"
        for p in players:
            assert await retried(p.balance, time.monotonic() + 30) == ledger.expected[p.player_id]
        banner = log_path.read_text()
        for name in ("postgres", "seaweedfs"):
            assert f"bgcluster: {name} SERVING again" in banner, name
        print(
            json.dumps(
                {
                    "wallet_answers": dict(codes),
                    "postgres_statuses": Counter(postgres_seen),
                    "seaweedfs_statuses": Counter(seaweed_seen),
                    "escrows": Counter(e.status for e in ledger.closed),
                }
            )
        )
        await wallet_channel.close(None)
    finally:
        stop.set()
        for task in drivers:
            task.cancel()
        for ch in channels:
            await ch.close(None)
        await cluster.stop()
        log.close()
