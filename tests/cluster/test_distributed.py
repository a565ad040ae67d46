"""Issue 14 on real distributed parts: `bgcluster up` with a 3-primary Valkey Cluster (each
primary with a replica), two gateways, three table replicas, and two replicas each of wallet and
leaderboard on an embedded PostgreSQL (their Kafka consumers share a group). The two players of
a wagered match sit on different gateways; the Valkey primary holding the table's slot is killed
-9 mid-match (frozen, as a node cut off is, while its replica takes the slot over and the match
plays to its end on both gateways; then killed -9: the supervisor brings it back as a replica);
the winner is paid once and the books balance."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis.asyncio as redis_asyncio
from redis.crc import key_slot
from sqlalchemy import select

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.table.v1 import table_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.player import Player
from infra.cluster.runner import Cluster, ClusterConfig
from infra.cluster.valkey_cluster import primary_of, wait_cluster_ok
from services.common.connections import redis_client, sql_engine
from services.contracts.redis_keys import table_key
from services.contracts.vocabulary import FINISHED
from services.table.shard_leases import MEMBERS
from services.wallet.ledger import check_invariants
from services.wallet.schema import escrows

pytestmark = pytest.mark.e2e
_EOF: Any = grpc.aio.EOF  # type: ignore[attr-defined]  # the stubs lack it
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
FUNDS = 10_000
BET = 100


async def _roles(ports: list[int]) -> dict[str, int]:
    """How many nodes are primaries and replicas, once every replica is attached."""
    roles: dict[str, int] = {}
    for _ in range(100):
        roles = {}
        for port in ports:
            client: Any = redis_asyncio.Redis(host="127.0.0.1", port=port)
            try:
                reply = await client.execute_command("ROLE")
            finally:
                await client.aclose()
            role = reply[0].decode()
            roles[role] = roles.get(role, 0) + 1
        if roles.get("slave") == max(1, len(ports) // 2):
            break
        await asyncio.sleep(0.2)
    return roles


async def _play_to_the_end(player: Player, table_id: str, until: float) -> table_pb2.TableView:
    """Play from pushed views, resuming on a new stream when one breaks (the failover)."""
    while True:
        try:
            view = await player.play(table_id, timeout_s=max(1.0, until - time.monotonic()))
            if view.phase in FINISHED:
                return view
        except (grpc.aio.AioRpcError, ConnectionError, TimeoutError):
            if time.monotonic() > until:
                raise
            await asyncio.sleep(0.3)


async def _newest_stream_takes_the_seat(
    player: Player, other_gateway: grpc.aio.Channel, table_id: str
) -> None:
    """Issue 27: the player's stream on the other gateway takes the seat from their first one,
    which is told (SEAT_TAKEN) through the Valkey Cluster's pub/sub and ends."""
    join = gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table_id))
    hold = asyncio.Event()

    async def requests() -> Any:
        yield join
        await hold.wait()

    first: Any = player.stub.Play(requests(), metadata=player.auth)
    assert (await first.read()).update.view.seat == 0
    stub = gateway_pb2_grpc.GatewayServiceStub(other_gateway)
    second: Any = stub.Play(requests(), metadata=player.auth)
    assert (await second.read()).update.view.seat == 0
    told = await asyncio.wait_for(first.read(), 10)
    while told.HasField("update"):  # updates pushed before it (the player_back of I-41, say)
        told = await asyncio.wait_for(first.read(), 10)
    assert told.error.error.code == "SEAT_TAKEN"
    assert await first.read() is _EOF
    second.cancel()
    hold.set()


async def test_players_on_two_gateways_over_a_valkey_cluster_survive_a_primarys_death(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BG_CLOCK_SCALE", "0.05")
    monkeypatch.setenv("BG_LOG_LEVEL", "WARNING")
    data = tmp_path / "data"
    log = (tmp_path / "cluster.log").open("w")
    config = ClusterConfig(
        replicas={"table": 3, "gateway": 2, "wallet": 2, "leaderboard": 2},
        data_dir=data, base_port=0, valkey_cluster=3,  # on an embedded PostgreSQL
    )  # fmt: skip
    cluster = Cluster(config, log)
    await cluster.start()
    channels: list[grpc.aio.Channel] = []
    try:
        gateways = [i.address for i in cluster.instances if i.service == "gateway"]
        assert len(gateways) == 2
        channels = [grpc.aio.insecure_channel(g, options=OPTIONS) for g in gateways]
        tag = uuid.uuid4().hex[:6]
        alice, bob = (Player(ch, f"dist{tag}{i}", seed=i) for i, ch in enumerate(channels))
        for p in (alice, bob):
            await p.login()
        wallet_address = next(i.address for i in cluster.instances if i.service == "wallet")
        async with grpc.aio.insecure_channel(wallet_address) as wch:
            wallet = wallet_pb2_grpc.WalletServiceStub(wch)
            for p in (alice, bob):
                await wallet.Deposit(
                    wallet_pb2.DepositRequest(
                        idempotency_key=f"fund:{p.player_id}", player_id=p.player_id, amount=FUNDS
                    ),
                    metadata=[("x-operator-token", cluster.operator_token)],
                )
        redis = redis_client(cluster.redis_url, cluster=True)
        try:
            info = (await redis.execute_command("CLUSTER", "INFO")).decode()
            assert "cluster_state:ok" in info and "cluster_size:3" in info
            assert len(await redis.zrange(MEMBERS, 0, -1)) == 3  # three table replicas lease
        finally:
            await redis.aclose()

        opts = table_pb2.TableOptions(profile="wagered", match_length=5, bet=BET)
        table = await alice.create_table(opts)
        await bob.join(table.code)
        table_id = str(table.table_id)
        await _newest_stream_takes_the_seat(alice, channels[1], table_id)
        until = time.monotonic() + 120
        games = [asyncio.create_task(_play_to_the_end(p, table_id, until)) for p in (alice, bob)]
        for _ in range(500):  # some moves made
            if (await alice.view(table_id)).seq >= 10:
                break
            await asyncio.sleep(0.01)
        port = await primary_of(cluster.redis_url, key_slot(table_key(table_id).encode()))
        address = f"redis://127.0.0.1:{port}/0"
        victim = next(p for p in cluster.infra if cluster.infra_addresses.get(p.name) == address)
        assert victim.pid is not None
        # Frozen, as a node cut off is: its sockets stay open and answer nothing. The cluster
        # fails it over (node timeout 2 s) and the game goes on to its end while it is still
        # frozen (calls to it time out, subscriptions on it are found silent by their pulse);
        # then it is killed -9 and restarted by the supervisor: it must rejoin as a replica.
        os.kill(victim.pid, signal.SIGSTOP)
        assert not any(g.done() for g in games)  # mid-match: the rest is played around it
        other = next(a for n, a in cluster.infra_addresses.items()
                     if n.startswith("valkey-") and a != address)  # fmt: skip
        slot = key_slot(table_key(table_id).encode())
        for _ in range(150):
            promoted = await primary_of(other, slot)  # 0 in the middle of the failover
            if promoted not in (0, port):
                break
            await asyncio.sleep(0.1)
        assert promoted not in (0, port)  # the replica took over the table's slot
        views = await asyncio.gather(*games)
        assert all(v.phase in FINISHED for v in views)
        assert len({v.seq for v in views}) == 1  # both gateways saw the table to its last event
        os.kill(victim.pid, signal.SIGKILL)
        for _ in range(100):  # the supervisor brings the node back
            if cluster.supervisor.restarts(victim.name) >= 1:
                break
            await asyncio.sleep(0.1)
        assert cluster.supervisor.restarts(victim.name) >= 1
        nodes = [int(a.rsplit(":", 1)[1].split("/")[0]) for n, a in cluster.infra_addresses.items()
                 if n.startswith("valkey-")]  # fmt: skip
        await wait_cluster_ok(nodes)
        assert await _roles(nodes) == {"master": 3, "slave": 3}
        assert await _roles([port]) == {"slave": 1}  # the old primary now replicates

        assert cluster.postgres_url  # two wallets share one database, two consumers one group
        engine = sql_engine(f"{cluster.postgres_url}/wallet")
        try:
            for _ in range(100):  # the wallet's consumer settles from the event stream
                async with engine.connect() as conn:
                    rows = (await conn.execute(select(escrows.c.status))).all()
                if rows and all(r.status == "settled" for r in rows):
                    break
                await asyncio.sleep(0.2)
            assert [r.status for r in rows] == ["settled"]
            assert await check_invariants(engine) == []
        finally:
            await engine.dispose()
        balances = [await p.balance() for p in (alice, bob)]
        assert sum(balances) < 2 * FUNDS and max(balances) > FUNDS  # paid once, fees taken
    finally:
        for ch in channels:
            await ch.close(None)
        await cluster.stop()
        log.close()
