"""Every service answers health, reflection and metrics for real, and shuts down gracefully."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from bg.identity.v1 import identity_pb2, identity_pb2_grpc
from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from infra.cluster.embedded import free_port
from services.analysis.app import build_app as analysis
from services.common import migrate as migrations
from services.common.errors import ServiceError, remote_call
from services.common.host import ServiceHost
from services.common.service import ServiceApp
from services.gateway.app import build_app as gateway
from services.identity.app import build_app as identity
from services.leaderboard.app import build_app as leaderboard
from services.matchmaking.app import build_app as matchmaking
from services.table.app import build_app as table
from services.wallet.app import build_app as wallet
from tests.helpers import scrape_metrics

pytestmark = pytest.mark.integration

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
BUILDERS: dict[str, Callable[[Mapping[str, str] | None], ServiceApp]] = {
    "gateway": gateway,
    "identity": identity,
    "matchmaking": matchmaking,
    "table": table,
    "wallet": wallet,
    "leaderboard": leaderboard,
}


def _env(valkey_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "BG_GRPC_PORT": "0",
        "BG_METRICS_PORT": "0",
        "BG_WS_PORT": "0",  # the gateway's; its default (8081) may be another test's
        "BG_CONSOLE_PORT": "0",  # the identity service's (8082)
        "BG_REDIS_URL": valkey_url,
        "BG_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/db.sqlite",
        "BG_READINESS_INTERVAL_S": "0.05",
        "BG_SHUTDOWN_GRACE_S": "1",
        **extra,
    }


async def _status(port: int, service: str = "") -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        reply = await health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=2
        )
        return int(reply.status)


@pytest.mark.parametrize("name", sorted(BUILDERS))
async def test_service_serves_health_reflection_metrics(
    name: str, valkey_url: str, tmp_path: Path
) -> None:
    host = ServiceHost(BUILDERS[name](_env(valkey_url, tmp_path)))
    await host.start()
    try:
        assert await _status(host.grpc_port) == SERVING
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
            stub = reflection_pb2_grpc.ServerReflectionStub(ch)
            replies = stub.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")])
            )
            names = [s.name async for r in replies for s in r.list_services_response.service]
        assert "grpc.health.v1.Health" in names
        body = await scrape_metrics(host.metrics_port)
        method = "/grpc.health.v1.Health/Check"
        check_line = (
            f'bg_grpc_server_handled_total{{code="OK",method="{method}",service="{name}"}} 1.0'
        )
        assert check_line in body
        assert f'bg_service_serving{{service="{name}"}} 1.0' in body
    finally:
        await host.stop()


async def test_shutdown_turns_not_serving_before_the_port_closes(
    valkey_url: str, tmp_path: Path
) -> None:
    host = ServiceHost(table(_env(valkey_url, tmp_path, BG_SHUTDOWN_DELAY_S="0.3")))
    await host.start()
    seen: list[int] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
        watch = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest())
        seen.append((await watch.read()).status)
        stopping = asyncio.create_task(host.stop())
        seen.append((await watch.read()).status)
        await stopping
    assert seen == [SERVING, NOT_SERVING]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _status(host.grpc_port)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_unreachable_dependency_means_not_serving(tmp_path: Path) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    host = ServiceHost(gateway(_env(dead, tmp_path)))
    await host.start()
    try:
        assert await _status(host.grpc_port) == NOT_SERVING
        assert host.serving is False
    finally:
        await host.stop()


async def test_readiness_recovers_when_dependency_returns(valkey_url: str, tmp_path: Path) -> None:
    """NOT_SERVING while Redis is down, SERVING once it answers (no restart needed)."""
    import redis.asyncio as redis_asyncio

    host = ServiceHost(gateway(_env(valkey_url, tmp_path, BG_READINESS_TIMEOUT_S="0.1")))
    await host.start()
    seen: list[bool] = []
    try:
        assert await _status(host.grpc_port) == SERVING
        admin = redis_asyncio.Redis.from_url(valkey_url)
        await admin.client_pause(800)  # the dependency stops answering for 0.8 s
        for _ in range(400):
            if not seen or seen[-1] != host.serving:
                seen.append(host.serving)
            if seen == [True, False, True]:
                break
            await asyncio.sleep(0.01)
        await admin.aclose()
        assert seen == [True, False, True]
        assert await _status(host.grpc_port) == SERVING
    finally:
        await host.stop()


# A read of each service with a database, and what it answers once started.
SCHEMA_CALLS: dict[str, tuple[Callable[[Mapping[str, str] | None], ServiceApp], Any]] = {
    "identity": (
        identity,
        lambda ch: identity_pb2_grpc.IdentityServiceStub(ch).ListBanned(
            identity_pb2.ListBannedRequest(), timeout=5
        ),
    ),
    "wallet": (
        wallet,
        lambda ch: wallet_pb2_grpc.WalletServiceStub(ch).GetBalance(
            wallet_pb2.GetBalanceRequest(player_id="p1"), timeout=5
        ),
    ),
    "leaderboard": (
        leaderboard,
        lambda ch: leaderboard_pb2_grpc.LeaderboardServiceStub(ch).History(
            leaderboard_pb2.HistoryRequest(player_id="p1"), timeout=5
        ),
    ),
    "analysis": (
        analysis,
        lambda ch: analysis_pb2_grpc.AnalysisServiceStub(ch).PlayerTrend(
            analysis_pb2.PlayerTrendRequest(player_id="p1"), timeout=5
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(SCHEMA_CALLS))
async def test_no_call_is_served_before_the_schema_is_at_its_revision(
    name: str, valkey_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 58, item 3: the identity service answered ListBanned before its migration ran
    ("relation "bans" does not exist", UNKNOWN at the gateway). While a service with a database
    migrates, its health says NOT_SERVING and every call of its own is refused UNAVAILABLE
    STARTING (retried elsewhere, nothing run); once the schema is at head it answers."""
    build, read = SCHEMA_CALLS[name]
    migrating, may_finish = asyncio.Event(), asyncio.Event()
    real = migrations.migrate

    async def slow_migrate(*args: Any, **kwargs: Any) -> None:
        migrating.set()
        await may_finish.wait()  # PostgreSQL slow to answer, another replica holding the lock
        await real(*args, **kwargs)

    monkeypatch.setattr(f"services.{name}.app.migrate", slow_migrate)
    host = ServiceHost(build(_env(valkey_url, tmp_path)))
    starting = asyncio.create_task(host.start())
    try:
        await asyncio.wait_for(migrating.wait(), 30)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
            for _ in range(3):
                with pytest.raises(ServiceError) as refused:
                    await remote_call(read(ch))
                assert (refused.value.status, refused.value.code) == (
                    grpc.StatusCode.UNAVAILABLE,
                    "STARTING",
                )
            assert await _status(host.grpc_port) == NOT_SERVING
            may_finish.set()
            await asyncio.wait_for(starting, 30)
            assert await _status(host.grpc_port) == SERVING
            await remote_call(read(ch))  # answered from the migrated schema
    finally:
        may_finish.set()
        await asyncio.gather(starting, return_exceptions=True)
        await host.stop()
