"""Clients for the contract tests, written from docs/protocol.md and the protos alone (not from
the gateway's code): a WebSocket client that sends every request with an id and checks that
each gets exactly one answer carrying it, and small gRPC helpers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections import Counter
from pathlib import Path
from typing import Any

import grpc

from bg.common.v1 import errors_pb2
from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import error_from

OPERATOR_METADATA = "x-operator-token"


def ws_url(cluster: dict[str, Any]) -> str:
    state = json.loads((Path(cluster["data"]) / "cluster.json").read_text())
    return str(next(s["ws"] for s in state["services"] if s["name"] == "gateway"))


def refusal(exc: BaseException) -> errors_pb2.Error:
    """The typed error of a refused gRPC call (docs/protocol.md, Errors: gRPC's rich status)."""
    assert isinstance(exc, grpc.aio.AioRpcError), exc
    detail = error_from(exc)
    assert detail is not None, f"no typed error in {exc!r}"
    return detail


async def fund(cluster: dict[str, Any], player_id: str, amount: int) -> None:
    async with grpc.aio.insecure_channel(cluster["wallet"]) as channel:
        await wallet_pb2_grpc.WalletServiceStub(channel).Deposit(
            wallet_pb2.DepositRequest(
                idempotency_key=f"fund:{player_id}", player_id=player_id, amount=amount
            ),
            metadata=[(OPERATOR_METADATA, cluster["operator"])],
        )


class GrpcPlayer:
    """A guest on the gateway's gRPC API."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        self.token = ""
        self.player_id = ""

    async def login(self, name: str = "") -> GrpcPlayer:
        reply = await self.stub.Login(
            gateway_pb2.LoginRequest(guest_name=name or "c" + secrets.token_hex(3))
        )
        self.token, self.player_id = reply.token, reply.player_id
        return self

    @property
    def auth(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")]


class WsClient:
    """One WebSocket connection, as docs/protocol.md's "WebSocket" section describes it."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.token = ""
        self.player_id = ""
        self.next_id = 0
        self.sent: list[int | str] = []
        self.answers: dict[Any, list[dict[str, Any]]] = {}
        self.waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.pushes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.violations: list[dict[str, Any]] = []  # messages off the envelope
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(Exception):  # the socket closing ends the reader
            async for raw in self.connection:
                message = json.loads(raw)
                if "push" in message:
                    if "id" in message:  # pushes carry no request id
                        self.violations.append(message)
                    await self.pushes.put(message)
                    continue
                if "id" not in message or ("response" in message) == ("error" in message):
                    self.violations.append(message)  # an answer has an id and one outcome
                self.answers.setdefault(message.get("id"), []).append(message)
                future = self.waiting.pop(message["id"], None)
                if future is not None and not future.done():
                    future.set_result(message)

    async def send(self, method: str, request: dict[str, Any], **extra: Any) -> int:
        """Send a request with a fresh id; returns the id."""
        self.next_id += 1
        request_id = self.next_id
        self.waiting[request_id] = asyncio.get_running_loop().create_future()
        self.sent.append(request_id)
        message = {"id": request_id, "method": method, "request": request, **extra}
        if self.token:
            message["token"] = self.token
        await self.connection.send(json.dumps(message))
        return request_id

    async def raw(self, message: dict[str, Any]) -> None:
        """Send a message as given (one missing a method, say); its id is expected back."""
        self.sent.append(message["id"])
        self.waiting[message["id"]] = asyncio.get_running_loop().create_future()
        await self.connection.send(json.dumps(message))

    async def answer(self, request_id: Any, timeout: float = 30) -> dict[str, Any]:
        if request_id in self.answers:
            return self.answers[request_id][0]
        future = self.waiting.setdefault(request_id, asyncio.get_running_loop().create_future())
        return await asyncio.wait_for(future, timeout)

    async def call(self, method: str, request: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """The one answer to a request: {"id", "response"} or {"id", "error"}."""
        return await self.answer(await self.send(method, request, **extra))

    async def ok(self, method: str, request: dict[str, Any], **extra: Any) -> dict[str, Any]:
        reply = await self.call(method, request, **extra)
        assert "response" in reply, reply
        return dict(reply["response"])

    async def login(self, name: str = "") -> WsClient:
        reply = await self.ok("Login", {"guestName": name or "w" + secrets.token_hex(3)})
        self.token, self.player_id = reply["token"], reply["playerId"]
        return self

    async def push(self, timeout: float = 30) -> dict[str, Any]:
        return await asyncio.wait_for(self.pushes.get(), timeout)

    async def update_at_least(self, table_id: str, seq: int) -> dict[str, Any]:
        """The first pushed SeatUpdate of `table_id` whose seq reaches `seq`."""
        while True:
            message = await self.push()
            if message["push"] != "update" or message["update"]["tableId"] != table_id:
                continue
            update: dict[str, Any] = message["update"]["update"]
            if int(update["seq"]) >= seq:
                return update

    def every_request_answered_once(self) -> None:
        """The envelope's promise: exactly one answer for each id sent, none for others."""
        assert self.violations == []
        counts = Counter({k: len(v) for k, v in self.answers.items()})
        assert all(counts[i] == 1 for i in self.sent), {i: counts[i] for i in self.sent}
        assert set(counts) - set(self.sent) <= {None}, set(counts) - set(self.sent)

    async def close(self) -> None:
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader
