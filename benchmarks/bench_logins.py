"""What a sign-in costs now that accounts are the identity service's (issue 44): guest logins
(the gateway alone: no account), a device's first login (an account made, the wallet's
starter grant), a device's return (its account found) and a refresh (a rotation), side by side
in one run on one local cluster (`bgcluster up`), CONCURRENCY clients each on its own
connection. Reported per kind: logins/s, p50/p99, and server CPU per login by process (from
/proc), the identity service's and the gateway's apart; the guest login is the floor the
account kinds are read against.
"""

from __future__ import annotations

import asyncio
import secrets
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from infra.cluster.local_cluster import RunningCluster, cpu_of, local_cluster

SECONDS = 6.0
CONCURRENCY = 10
Login = Callable[["gateway_pb2_grpc.GatewayServiceAsyncStub", int], Awaitable[None]]


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else 0.0


async def _phase(
    cluster: RunningCluster, channels: list[grpc.aio.Channel], login: Login
) -> dict[str, float]:
    lat: list[float] = []
    pids = cluster.pids
    cpu = cpu_of(pids)
    started = time.monotonic()
    until = started + SECONDS

    async def client(i: int) -> int:
        stub = gateway_pb2_grpc.GatewayServiceStub(channels[i])
        done = 0
        while time.monotonic() < until:
            sent = time.monotonic()
            await login(stub, i)
            lat.append(time.monotonic() - sent)
            done += 1
        return done

    count = sum(await asyncio.gather(*(client(i) for i in range(CONCURRENCY))))
    elapsed = time.monotonic() - started
    used = {k: v - cpu[k] for k, v in cpu_of(pids).items()}
    per = 1000 / max(1, count)
    return {
        "per_s": count / elapsed,
        "p50_ms": _pct(lat, 0.5) * 1000,
        "p99_ms": _pct(lat, 0.99) * 1000,
        "cpu_ms": sum(used.values()) * per,
        "gateway": sum(v for k, v in used.items() if k.startswith("gateway")) * per,
        "identity": sum(v for k, v in used.items() if k.startswith("identity")) * per,
        "wallet": sum(v for k, v in used.items() if k.startswith("wallet")) * per,
    }


async def _main(cluster: RunningCluster) -> None:
    address = cluster.address("gateway")
    channels = [grpc.aio.insecure_channel(address) for _ in range(CONCURRENCY)]
    devices: list[list[str]] = [[] for _ in range(CONCURRENCY)]
    refresh = [""] * CONCURRENCY
    turn = [0] * CONCURRENCY

    async def guest(stub: gateway_pb2_grpc.GatewayServiceAsyncStub, i: int) -> None:
        await stub.Login(gateway_pb2.LoginRequest(guest_name=f"guest{i}"), timeout=10)

    async def first(stub: gateway_pb2_grpc.GatewayServiceAsyncStub, i: int) -> None:
        device = secrets.token_urlsafe(32)
        ask = gateway_pb2.LoginRequest(device_id=device, display_name=f"bench{i}")
        reply = await stub.Login(ask, timeout=10)
        devices[i].append(device)
        refresh[i] = reply.refresh_token

    async def back(stub: gateway_pb2_grpc.GatewayServiceAsyncStub, i: int) -> None:
        device = devices[i][turn[i] % len(devices[i])]
        turn[i] += 1
        ask = gateway_pb2.LoginRequest(device_id=device, display_name=f"bench{i}")
        await stub.Login(ask, timeout=10)

    async def renew(stub: gateway_pb2_grpc.GatewayServiceAsyncStub, i: int) -> None:
        reply = await stub.Refresh(gateway_pb2.RefreshRequest(refresh_token=refresh[i]), timeout=10)
        refresh[i] = reply.refresh_token

    try:
        rows = {}
        for name, login in (
            ("guest (no account)", guest),
            ("device, first login", first),
            ("device, returning", back),
            ("refresh", renew),
        ):
            rows[name] = row = await _phase(cluster, channels, login)
            print(
                f"   {name:22} {row['per_s']:7.0f} login/s   p50 {row['p50_ms']:6.1f} ms   "
                f"p99 {row['p99_ms']:6.1f} ms   server CPU {row['cpu_ms']:5.2f} ms/login "
                f"(gateway {row['gateway']:.2f}, identity {row['identity']:.2f}, "
                f"wallet {row['wallet']:.2f})"
            )
        floor = rows["guest (no account)"]["cpu_ms"]
        ratios = ", ".join(
            f"{name} {row['cpu_ms'] / floor:.1f}x"
            for name, row in rows.items()
            if not name.startswith("guest")
        )
        print(f"   CPU per login against a guest's ({floor:.2f} ms): {ratios}")
    finally:
        for channel in channels:
            await channel.close(None)


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-logins-"))
    env = {
        "BG_LOG_LEVEL": "WARNING",
        "BG_RATE_PER_S": "100000",
        "BG_RATE_PER_PEER_S": "100000",
        "BG_RATE_PER_LOGIN_S": "100000",
    }
    with local_cluster(workdir, env) as cluster:
        asyncio.run(_main(cluster))
