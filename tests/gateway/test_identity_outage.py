"""The gateway and the identity service as separate processes (issue 44 item 3): with the
identity service away, an account's login and a friends view are refused with a typed,
retryable error and nothing else stops (a guest still signs in); once it is back, the same
device logs in and the view answers, with no restart of the gateway."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import grpc
import pytest

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from infra.cluster.embedded import free_port
from services.common.host import ServiceHost
from services.gateway.app import build_app as gateway
from services.identity.app import build_app as identity
from tests.helpers import error_of, retried

pytestmark = pytest.mark.integration


async def test_an_identity_outage_costs_account_logins_only(
    valkey_url: str, tmp_path: Path
) -> None:
    port = free_port()
    edge = ServiceHost(
        gateway(
            {
                "BG_GRPC_PORT": "0", "BG_METRICS_PORT": "0", "BG_WS_PORT": "0",
                "BG_REDIS_URL": valkey_url, "BG_IDENTITY_ADDR": f"127.0.0.1:{port}",
                "BG_TOKEN_SECRET": "t" * 40,
            }
        )
    )  # fmt: skip
    await edge.start()
    accounts: ServiceHost | None = None
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{edge.grpc_port}") as channel:
            stub = gateway_pb2_grpc.GatewayServiceStub(channel)
            phone = gateway_pb2.LoginRequest(
                device_id=secrets.token_urlsafe(32), display_name="ida"
            )
            with pytest.raises(grpc.aio.AioRpcError) as away:
                await stub.Login(phone, timeout=30)
            assert away.value.code() == grpc.StatusCode.UNAVAILABLE
            assert error_of(away.value).code == "UPSTREAM_UNAVAILABLE"
            guest = await stub.Login(gateway_pb2.LoginRequest(guest_name="gil"), timeout=10)
            assert guest.token and not guest.refresh_token
            bearer = (("authorization", f"Bearer {guest.token}"),)
            friends = gateway_pb2.GetFriendsRequest()
            with pytest.raises(grpc.aio.AioRpcError) as no_friends:
                await stub.GetFriends(friends, metadata=bearer, timeout=30)
            assert no_friends.value.code() == grpc.StatusCode.UNAVAILABLE
            assert error_of(no_friends.value).code == "UPSTREAM_UNAVAILABLE"
            accounts = ServiceHost(
                identity(
                    {
                        "BG_GRPC_PORT": str(port), "BG_METRICS_PORT": "0", "BG_CONSOLE_PORT": "0",
                        "BG_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'identity.db'}",
                        "BG_REDIS_URL": valkey_url,
                    }
                )
            )  # fmt: skip
            await accounts.start()
            # As a client does with a retryable refusal: the gateway's channel reconnects
            # within its capped backoff (services/common/balanced.py), not at once.
            soon = time.monotonic() + 15
            back = await retried(lambda: stub.Login(phone, timeout=5), soon)
            assert back.display_name == "ida" and back.refresh_token
            again = await stub.Login(phone, timeout=30)
            assert again.player_id == back.player_id  # the same account, kept by identity
            view = await retried(lambda: stub.GetFriends(friends, metadata=bearer, timeout=5), soon)
            assert list(view.friends) == [] and list(view.blocked) == []
    finally:
        if accounts is not None:
            await accounts.stop()
        await edge.stop()
