"""Issue 44, item 3: one transport-free application layer. The gRPC servicer and the WebSocket
call the same handlers (services/gateway/handlers.py) with a `Caller`, and each transport
answers a handler's refusal in its own form: gRPC's status and typed trailers, the WebSocket's
error object. No fake gRPC context stands between the WebSocket and the handlers."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry
from redis import exceptions as redis_errors

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from services.common.errors import PermissionDenied
from services.gateway import api, ws
from services.gateway.account_handlers import AccountHandlers
from services.gateway.callers import Caller
from services.gateway.handlers import GROUPS, STREAMS, GatewayHandlers
from services.gateway.metrics import GatewayMetrics
from wire.errors import error_in

SERVICE = gateway_pb2.DESCRIPTOR.services_by_name["GatewayService"]


def test_every_method_of_the_service_is_served_by_a_handler_of_its_name() -> None:
    base = gateway_pb2_grpc.GatewayServiceServicer
    served = {name: group for group in GROUPS for name in group.UNARY}
    assert sum(len(group.UNARY) for group in GROUPS) == len(served)  # each in one group only
    for method in SERVICE.methods:
        assert getattr(api.GatewayServicer, method.name) is not getattr(base, method.name)
        group = GatewayHandlers if method.name in STREAMS else served[method.name]
        assert callable(getattr(group, method.name, None)), method.name
    streams = {m.name for m in SERVICE.methods if m.server_streaming or m.client_streaming}
    assert streams == set(STREAMS) and set(served) == set(api.UNARY_METHODS)
    assert set(api.UNARY_METHODS) == {m.name for m in SERVICE.methods} - streams


def test_every_websocket_method_is_a_unary_handler() -> None:
    assert set(ws.UNARY) <= set(api.UNARY_METHODS)
    assert "Login" in ws.UNARY and "GetBalance" in ws.UNARY


class Handlers:
    """An application layer that answers GetBalance by the caller's token."""

    def __init__(self) -> None:
        self.callers: list[Caller] = []
        self.metrics = GatewayMetrics(CollectorRegistry())
        self.unary = {"GetBalance": self.GetBalance}

    async def GetBalance(
        self, request: gateway_pb2.BalanceRequest, caller: Caller
    ) -> gateway_pb2.BalanceResponse:
        self.callers.append(caller)
        if caller.token == "banned":
            raise PermissionDenied("BANNED", "this player is banned")
        if caller.token == "store-down":
            raise redis_errors.ConnectionError("Valkey went away")
        if caller.token == "bug":
            raise KeyError("a bug")
        return gateway_pb2.BalanceResponse(balance=7)


class Aborted(Exception):
    pass


class GrpcContext:
    """What a grpc.aio call shows its servicer (the parts the servicer reads)."""

    def __init__(self, metadata: list[tuple[str, str]]) -> None:
        self.metadata = metadata
        self.trailers: Any = ()
        self.status: grpc.StatusCode | None = None

    def peer(self) -> str:
        return "ipv4:10.0.0.7:5000"

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return self.metadata

    def set_trailing_metadata(self, trailers: Any) -> None:
        self.trailers = trailers

    async def abort(self, status: grpc.StatusCode, details: str) -> None:
        self.status = status
        raise Aborted(details)


async def test_grpc_tells_the_handler_who_calls_and_answers_its_refusal_with_trailers() -> None:
    handlers = Handlers()
    servicer: Any = api.GatewayServicer(handlers)  # type: ignore[abstract,arg-type]
    context = GrpcContext([("authorization", "Bearer tok"), ("x-service-credential", "s")])
    reply = await servicer.GetBalance(gateway_pb2.BalanceRequest(), context)
    assert reply.balance == 7
    assert handlers.callers == [Caller("ipv4:10.0.0.7:5000", "tok", "s")]
    refused = GrpcContext([("authorization", "Bearer banned")])
    with pytest.raises(Aborted):
        await servicer.GetBalance(gateway_pb2.BalanceRequest(), refused)
    detail = error_in(refused.trailers)
    assert refused.status == grpc.StatusCode.PERMISSION_DENIED
    assert detail is not None and detail.code == "BANNED"
    await servicer.GetBalance(gateway_pb2.BalanceRequest(), GrpcContext([]))
    assert handlers.callers[-1].token is None  # no bearer token: Callers.player says NO_TOKEN


async def test_the_websocket_calls_the_same_handler_and_answers_in_its_own_form() -> None:
    handlers = Handlers()
    gateway = ws.WsGateway(handlers)  # type: ignore[arg-type]

    async def call(token: str) -> dict[str, Any]:
        message = {"id": 3, "method": "GetBalance", "request": {}}
        return await gateway._unary("GetBalance", message, Caller("ipv4:1.2.3.4:9", token))

    assert await call("tok") == {"id": 3, "response": {"balance": "7"}}
    assert handlers.callers == [Caller("ipv4:1.2.3.4:9", "tok")]
    refused = (await call("banned"))["error"]
    assert (refused["status"], refused["code"]) == ("PERMISSION_DENIED", "BANNED")
    down = (await call("store-down"))["error"]  # retryable, as gRPC's UNAVAILABLE
    assert (down["status"], down["code"]) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    bug = (await call("bug"))["error"]  # answered; the connection goes on
    assert (bug["status"], bug["code"]) == ("INTERNAL", "INTERNAL")
    json.dumps(bug)  # every answer is JSON
    calls = handlers.metrics.ws_calls  # the WebSocket's calls, by outcome
    counted = {s: calls.labels("GetBalance", s)._value.get() for s in ("OK", "UNAVAILABLE")}
    assert counted == {"OK": 1.0, "UNAVAILABLE": 1.0}


async def test_a_stream_refused_at_its_start_is_answered_on_the_websocket() -> None:
    sent: list[dict[str, Any]] = []

    async def send(reply: dict[str, Any]) -> None:
        sent.append(reply)

    async def refused_stream() -> None:
        raise PermissionDenied("BANNED", "this player is banned")

    pushes = ws.FriendsPushes(send, 5)
    await ws.WsGateway._stream(refused_stream(), pushes)
    assert [(r["id"], r["error"]["code"]) for r in sent] == [(5, "BANNED")]


async def test_streams_and_sign_ins_are_counted_by_kind_transport_and_outcome() -> None:
    """The gateway's own metrics (services/gateway/metrics.py): a stream is open while its
    handler runs; a sign-in counts by kind and outcome."""
    metrics = GatewayMetrics(CollectorRegistry())
    gauge = metrics.streams.labels("watch", "ws")
    with metrics.stream_open("watch", "ws"):
        assert gauge._value.get() == 1.0
    assert gauge._value.get() == 0.0

    class SignIn:
        async def login(self, request: gateway_pb2.LoginRequest) -> gateway_pb2.LoginResponse:
            if request.email:
                raise PermissionDenied("LOCKED", "too many failures")
            return gateway_pb2.LoginResponse(player_id="p1")

    class Callers:
        def peer(self, caller: Caller, request: Any) -> None:
            return None

    handlers: Any = AccountHandlers.__new__(AccountHandlers)
    handlers.callers, handlers.sign_in, handlers.metrics = Callers(), SignIn(), metrics
    await handlers.Login(gateway_pb2.LoginRequest(device_id="d" * 32), Caller("ipv4:1.2.3.4:5"))
    with pytest.raises(PermissionDenied):
        await handlers.Login(gateway_pb2.LoginRequest(email="a@b.c"), Caller("ipv4:1.2.3.4:5"))
    assert metrics.logins.labels("device", "ok")._value.get() == 1.0
    assert metrics.logins.labels("email", "LOCKED")._value.get() == 1.0


async def test_a_websocket_connection_is_counted_while_it_is_open() -> None:
    handlers = Handlers()
    gateway = ws.WsGateway(handlers)  # type: ignore[arg-type]
    gauge = handlers.metrics.ws_connections
    seen: list[float] = []

    class Connection:
        remote_address = ("10.0.0.9", 4000)
        sent: list[str] = []

        async def send(self, text: str) -> None:
            self.sent.append(text)

        async def __aiter__(self) -> Any:
            seen.append(gauge._value.get())
            yield json.dumps({"id": 1, "method": "GetBalance", "request": {}, "token": "tok"})

    connection = Connection()
    await gateway.handle(connection)
    assert seen == [1.0] and gauge._value.get() == 0.0
    assert json.loads(connection.sent[0]) == {"id": 1, "response": {"balance": "7"}}
    assert handlers.callers == [Caller("ipv4:10.0.0.9:4000", "tok", transport="ws")]
