"""Chat and friends over gRPC (bg.social.v1.SocialService, served by the identity service),
through the gateway's own adapter (services/gateway/adapters/grpc_social.py) as the gateway
calls it, on a real identity process's app and a real Valkey: views and refusals cross with
their code, field and status unchanged; the live delivery's question (who muted or blocked a
sender) is answered here; a friends view names every followed account, however many (the
gateway's names directory answered at most 16 at a time, so a 17th follow broke the view)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from bg.gateway.v1 import gateway_pb2
from bg.identity.v1 import identity_pb2_grpc
from bg.social.v1 import social_pb2, social_pb2_grpc
from services.common.errors import ServiceError
from services.common.host import ServiceHost
from services.contracts.redis_keys import name_key
from services.gateway.adapters.grpc_identity import GrpcAccounts
from services.gateway.adapters.grpc_social import GrpcSocial
from services.identity.app import build_app

pytestmark = [pytest.mark.integration, pytest.mark.single_valkey]
Social = tuple[GrpcSocial, GrpcAccounts, "social_pb2_grpc.SocialServiceAsyncStub"]


@contextlib.asynccontextmanager
async def _identity(db: Path, redis_url: str) -> AsyncIterator[Social]:
    app = build_app(
        {
            "BG_GRPC_PORT": "0",
            "BG_METRICS_PORT": "0",
            "BG_CONSOLE_PORT": "0",
            "BG_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "BG_REDIS_URL": redis_url,
            "BG_FRIENDS_MAX": "30",
        }
    )
    host = ServiceHost(app)
    await host.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel:
            stub = social_pb2_grpc.SocialServiceStub(channel)
            accounts = GrpcAccounts(identity_pb2_grpc.IdentityServiceStub(channel))
            yield GrpcSocial(stub), accounts, stub
    finally:
        await host.stop()


@pytest.fixture
async def social(tmp_path: Path, valkey_url: str, redis: Any) -> AsyncIterator[Social]:
    async with _identity(tmp_path / "identity.db", valkey_url) as found:
        yield found


async def _refused(call: Any) -> ServiceError:
    with pytest.raises(ServiceError) as err:
        await call
    return err.value


def _follow(other: str, following: bool = True) -> gateway_pb2.FollowRequest:
    return gateway_pb2.FollowRequest(player_id=other, following=following)


async def test_a_friends_view_and_its_refusals_cross_the_wire_intact(
    social: Social, redis: Any
) -> None:
    client, _, _ = social
    await redis.set(name_key("g-bob"), "Bob")  # a guest, named by the gateway at its login
    view = await client.follow("g-ann", _follow("g-bob"))
    assert [(f.player_id, f.display_name, f.status) for f in view.friends] == [
        ("g-bob", "Bob", gateway_pb2.FRIEND_STATUS_OFFLINE)
    ]
    assert await client.view("g-ann") == view
    itself = await _refused(client.follow("g-ann", _follow("g-ann")))
    assert (itself.code, itself.field, itself.status) == (
        "FRIEND_SELF", "player_id", grpc.StatusCode.INVALID_ARGUMENT,
    )  # fmt: skip
    nobody = await _refused(client.follow("g-ann", _follow("g-nobody")))
    assert (nobody.code, nobody.status) == ("UNKNOWN_PLAYER", grpc.StatusCode.NOT_FOUND)
    unasked = await _refused(
        client.challenge("g-ann", gateway_pb2.ChallengeRequest(player_id="g-cid"))
    )
    assert unasked.code == "CHALLENGE_NOT_FOLLOWED"
    # A call naming no player is the gateway's bug, refused as such, and nothing is stored.
    before = set(await redis.keys("friends:*"))
    _, _, stub = social
    with pytest.raises(grpc.aio.AioRpcError) as nameless:
        await stub.Follow(social_pb2.FollowCall(request=_follow("g-bob")))
    assert nameless.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert set(await redis.keys("friends:*")) == before


async def test_the_readers_who_muted_or_blocked_a_sender_are_named_for_the_delivery(
    social: Social, redis: Any
) -> None:
    client, _, _ = social
    await redis.set(name_key("g-eve"), "Eve")
    readers = ["g-ann", "g-bob", "g-cid"]
    assert await client.hidden_from("g-eve", readers) == []
    muted = await client.mute("g-ann", gateway_pb2.MuteChatRequest(player_id="g-eve", muted=True))
    assert list(muted.muted) == ["g-eve"]
    await client.block("g-cid", gateway_pb2.BlockRequest(player_id="g-eve", blocked=True))
    assert await client.hidden_from("g-eve", readers) == ["g-ann", "g-cid"]
    assert await client.hidden_from("g-bob", readers) == []  # only the sender they meant
    await client.mute("g-ann", gateway_pb2.MuteChatRequest(player_id="g-eve", muted=False))
    assert await client.hidden_from("g-eve", readers) == ["g-cid"]


async def test_a_view_names_every_followed_account_however_many(social: Social) -> None:
    client, accounts, _ = social
    fan = await accounts.device_login(secrets.token_urlsafe(32), "fan")
    followed = {}
    for n in range(20):
        session = await accounts.device_login(secrets.token_urlsafe(32), f"star{n}")
        followed[session.identity.player_id] = session.identity.name
        await client.follow(fan.identity.player_id, _follow(session.identity.player_id))
    view = await client.view(fan.identity.player_id)
    assert {f.player_id: f.display_name for f in view.friends} == followed
