"""Issue 58, item 6: a stream the gateway refuses keeps its documented code. A Play stream opened
with a forged token (another player's id under the first player's signature) and sent on at
once ended UNAUTHENTICATED `BAD_TOKEN` in most runs and INTERNAL "Internal error from Core" in
some: the gateway refused the stream as it began, and a client message still on its way then
failed in the client's gRPC, which reported that failure instead of the status the server had
sent (grpc/grpc#36066). Many such streams at once, each sending its join and a command without
waiting: every one ends UNAUTHENTICATED BAD_TOKEN; and streams refused for their first
message (not a join) each end INVALID_ARGUMENT JOIN_FIRST. (Watch and Friends take one request
and the client sends nothing after it: no message can be on its way.)"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import redis.asyncio as redis_asyncio
from prometheus_client import CollectorRegistry

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.table.v1 import table_pb2
from services.common.tokens import Identity, TokenSigner
from services.gateway.api import GatewayServicer
from services.gateway.callers import Callers
from services.gateway.handlers import GatewayHandlers
from services.gateway.metrics import GatewayMetrics
from services.gateway.play_handlers import PlayHandlers
from services.gateway.play_streams import PlayStreams
from services.gateway.rate_limits import RateLimits
from wire.errors import error_from

STREAMS = 600


def _forged(signer: TokenSigner) -> str:
    """Ann's token with Bob's player id put in its claims, Ann's signature kept."""
    token, _ = signer.issue(Identity("ann", "Ann"))
    head, claims, signature = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    body["sub"] = "bob"
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    return f"{head}.{forged}.{signature}"


@pytest.fixture
async def gateway(valkey_url: str) -> AsyncIterator[tuple[Any, TokenSigner]]:
    signer = TokenSigner("s" * 40, 600)
    redis = redis_asyncio.Redis.from_url(valkey_url)
    callers = Callers(signer, RateLimits(redis, 1e6, 1e6, per_login_s=1e6, player_burst=1e6))
    streams = PlayStreams(callers, *([None] * 8))  # type: ignore[arg-type]
    metrics = GatewayMetrics(CollectorRegistry())
    handlers: Any = GatewayHandlers.__new__(GatewayHandlers)
    handlers.play = PlayHandlers(callers, streams, None, None, metrics)  # type: ignore[arg-type]
    handlers.metrics, handlers.unary = metrics, {}
    server = grpc.aio.server()
    servicer = GatewayServicer(handlers)  # type: ignore[abstract]  # its methods: api.py's
    gateway_pb2_grpc.add_GatewayServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    yield gateway_pb2_grpc.GatewayServiceStub(channel), signer
    await channel.close(None)
    await server.stop(0)
    await redis.aclose()


async def _requests(n: int, join: bool = True) -> AsyncIterator[gateway_pb2.PlayRequest]:
    command = gateway_pb2.PlayCommand(command_id="c1", command=table_pb2.Command(roll={}))
    if join:
        yield gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id="t1"))
    else:
        yield gateway_pb2.PlayRequest(command=command)
    await asyncio.sleep(n % 10 / 1000)  # the command 0-9 ms after: over the refusal
    yield gateway_pb2.PlayRequest(command=command)
    await asyncio.sleep(5)  # the client waits for its answer, its side still open


async def _play_ends(stub: Any, token: str, n: int, join: bool = True) -> str:
    call = stub.Play(_requests(n, join), metadata=[("authorization", f"Bearer {token}")])
    try:
        async for _ in call:
            return "an update"
    except grpc.aio.AioRpcError as exc:
        detail = error_from(exc)
        return f"{exc.code().name} {detail.code if detail else exc.details()}"
    return "ended OK"


async def test_many_play_streams_with_a_forged_token_each_end_bad_token(
    gateway: tuple[Any, TokenSigner],
) -> None:
    """On this week's main: INTERNAL in one stream of a few hundred, in most runs."""
    stub, signer = gateway
    forged = _forged(signer)
    ends = await asyncio.gather(*(_play_ends(stub, forged, n) for n in range(STREAMS)))
    assert {e: ends.count(e) for e in set(ends)} == {"UNAUTHENTICATED BAD_TOKEN": STREAMS}


async def test_many_play_streams_sending_a_command_first_each_end_join_first(
    gateway: tuple[Any, TokenSigner],
) -> None:
    stub, signer = gateway
    token, _ = signer.issue(Identity("ann", "Ann"))
    ends = await asyncio.gather(*(_play_ends(stub, token, n, join=False) for n in range(STREAMS)))
    assert {e: ends.count(e) for e in set(ends)} == {"INVALID_ARGUMENT JOIN_FIRST": STREAMS}
