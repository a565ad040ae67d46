"""The gateway's API over WebSocket for browsers: the same messages in the protobuf JSON mapping.

Client -> gateway, one JSON object per message:
  {"id": 1, "method": "Login", "request": {"guestName": "ann"}}
  {"id": 2, "method": "CreateTable", "request": {...}, "token": "<token>"}   (token once is enough)
  {"id": 3, "method": "Play", "request": {"join": {"tableId": "...", "fromSeq": "0"}}}
  {"method": "Play", "request": {"command": {"commandId": "c1", "command": {"roll": {}}}}}
Gateway -> client:
  {"id": 1, "response": {...}}   or   {"id": 1, "error": {"status": "...", "code": "...", ...}}
  {"update": {...PlayUpdate...}}  for everything the Play stream carries.
Unary calls and the Play stream run through the very servicer the gRPC API uses, so
authentication, seat checks and rate limits are the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.protobuf import json_format

from bg.common.v1 import errors_pb2
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.errors import ERROR_KEY
from services.gateway.api import GatewayServicer

log = logging.getLogger("bg.gateway.ws")

UNARY: dict[str, Any] = {
    "Login": gateway_pb2.LoginRequest,
    "CreateTable": matchmaking_pb2.CreateTableRequest,
    "ListTables": matchmaking_pb2.ListTablesRequest,
    "JoinByCode": matchmaking_pb2.JoinByCodeRequest,
    "QuickMatch": matchmaking_pb2.QuickMatchRequest,
    "StartTable": matchmaking_pb2.TableRequest,
    "LeaveTable": matchmaking_pb2.TableRequest,
    "GetTable": matchmaking_pb2.TableRequest,
    "GetView": gateway_pb2.ViewRequest,
    "GetMatchRecord": table_pb2.GetMatchRecordRequest,
    "GetBalance": gateway_pb2.BalanceRequest,
    "SetPreferences": gateway_pb2.PreferencesRequest,
    "GetLeaderboard": leaderboard_pb2.TopRequest,
    "GetRank": leaderboard_pb2.RankRequest,
    "GetProfile": leaderboard_pb2.ProfileRequest,
}


class Aborted(Exception):
    def __init__(self, status: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.status = status


class WsContext:
    """The part of grpc.aio.ServicerContext the servicer uses."""

    def __init__(self, token: str, connection_id: str, connection: Any = None) -> None:
        self.token = token
        self.connection_id = connection_id
        self.connection = connection
        self.error: errors_pb2.Error | None = None

    def peer(self) -> str:
        return self.connection_id

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")] if self.token else []

    def set_trailing_metadata(self, metadata: Any) -> None:
        for key, value in metadata:
            if key == ERROR_KEY:
                self.error = errors_pb2.Error()
                self.error.ParseFromString(value)

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)

    async def write(self, update: gateway_pb2.PlayUpdate) -> None:
        await self.connection.send(json.dumps({"update": json_format.MessageToDict(update)}))


def _error(ctx: WsContext, exc: Aborted) -> dict[str, Any]:
    out: dict[str, Any] = {"status": exc.status.name, "message": str(exc)}
    if ctx.error is not None:
        out |= json_format.MessageToDict(ctx.error)
    return out


class WsGateway:
    def __init__(self, servicer: GatewayServicer) -> None:
        self.servicer = servicer

    async def handle(self, connection: Any) -> None:
        token = ""
        conn_id = f"ws:{id(connection)}"
        play_queue: asyncio.Queue[gateway_pb2.PlayRequest | None] | None = None
        play_task: asyncio.Task[None] | None = None
        try:
            async for raw in connection:
                try:
                    message = json.loads(raw)
                    method = message["method"]
                except (ValueError, KeyError, TypeError):
                    await connection.send(
                        json.dumps({"error": {"status": "INVALID_ARGUMENT", "code": "MALFORMED"}})
                    )
                    continue
                token = message.get("token") or token
                if method == "Play":
                    request = json_format.ParseDict(
                        message.get("request", {}), gateway_pb2.PlayRequest()
                    )
                    if play_queue is None:
                        play_queue = asyncio.Queue()
                        await play_queue.put(request)
                        play_task = asyncio.create_task(
                            self._play(
                                connection,
                                play_queue,
                                WsContext(token, conn_id, connection),
                                message.get("id"),
                            )
                        )
                    else:
                        await play_queue.put(request)
                    continue
                await connection.send(
                    json.dumps(await self._unary(method, message, WsContext(token, conn_id)))
                )
        finally:
            if play_queue is not None:
                await play_queue.put(None)
            if play_task is not None:
                play_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await play_task

    async def _unary(self, method: str, message: dict[str, Any], ctx: WsContext) -> dict[str, Any]:
        reply: dict[str, Any] = {"id": message.get("id")}
        request_type = UNARY.get(method)
        if request_type is None:
            reply["error"] = {
                "status": "UNIMPLEMENTED",
                "code": "UNKNOWN_METHOD",
                "message": method,
            }
            return reply
        try:
            request = json_format.ParseDict(message.get("request", {}), request_type())
            response = await getattr(self.servicer, method)(request, ctx)
            reply["response"] = json_format.MessageToDict(response)
        except Aborted as exc:
            reply["error"] = _error(ctx, exc)
        except json_format.ParseError as exc:
            reply["error"] = {
                "status": "INVALID_ARGUMENT",
                "code": "MALFORMED",
                "message": str(exc),
            }
        return reply

    async def _play(
        self,
        connection: Any,
        queue: asyncio.Queue[gateway_pb2.PlayRequest | None],
        ctx: WsContext,
        request_id: Any,
    ) -> None:
        async def requests() -> AsyncIterator[gateway_pb2.PlayRequest]:
            while (item := await queue.get()) is not None:
                yield item

        try:
            await self.servicer.Play(requests(), ctx)  # type: ignore[arg-type]
        except Aborted as exc:
            await connection.send(json.dumps({"id": request_id, "error": _error(ctx, exc)}))
