"""The gateway's API over WebSocket for browsers: the same messages in the protobuf JSON mapping.

Client -> gateway, one JSON object per message:
  {"id": 1, "method": "Login", "request": {"guestName": "ann"}}
  {"id": 2, "method": "CreateTable", "request": {...}, "token": "<token>"}   (token once is enough)
  {"id": 3, "method": "Play", "request": {"join": {"tableId": "...", "fromSeq": "0"}}}
  {"method": "Play", "tableId": "...", "request": {"command": {"commandId": "c1", ...}}}
  {"id": 4, "method": "Watch", "request": {"tableId": "...", "fromSeq": "0"}}   (read-only, I-35)
Gateway -> client:
  {"id": 1, "response": {...}}   or   {"id": 1, "error": {"status": "...", "code": "...", ...}}
  {"update": {...PlayUpdate...}}  for everything the Play streams carry (`update.tableId` says
  which table: one connection may join several tables, each its own stream; a command names its
  table with "tableId", optional while one table is joined).
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
from websockets.exceptions import ConnectionClosed

from bg.common.v1 import errors_pb2
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.errors import ERROR_KEY
from services.gateway.api import GatewayServicer

log = logging.getLogger("bg.gateway.ws")
MAX_STREAMS = 8  # Play streams one connection may hold
MAX_MESSAGE = 64 * 1024  # bytes in one client message

UNARY: dict[str, Any] = {
    "Login": gateway_pb2.LoginRequest,
    "Refresh": gateway_pb2.RefreshRequest,
    "Logout": gateway_pb2.LogoutRequest,
    "LinkEmail": gateway_pb2.LinkEmailRequest,
    "DeleteAccount": gateway_pb2.DeleteAccountRequest,
    "SetDisplayName": gateway_pb2.SetDisplayNameRequest,
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
    "GetNames": gateway_pb2.NamesRequest,
    "ExportMatch": gateway_pb2.ExportMatchRequest,
    "SetPreferences": gateway_pb2.PreferencesRequest,
    "SetPrivacy": gateway_pb2.PrivacyRequest,
    "GetLeaderboard": leaderboard_pb2.TopRequest,
    "GetRank": leaderboard_pb2.RankRequest,
    "GetProfile": leaderboard_pb2.ProfileRequest,
    "GetMatchHistory": leaderboard_pb2.HistoryRequest,
    "GetArchivedMatch": leaderboard_pb2.ArchivedMatchRequest,
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
        try:
            await self.connection.send(json.dumps({"update": json_format.MessageToDict(update)}))
        except ConnectionClosed:
            raise asyncio.CancelledError from None  # the socket is gone: end the stream


def _request_id(message: dict[str, Any]) -> int | str | None:
    """The client's request id as it will be echoed: a number or a short string, else none."""
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value if isinstance(value, int) or len(value) <= 64 else None


def _malformed(message: str) -> dict[str, Any]:
    return {"status": "INVALID_ARGUMENT", "code": "MALFORMED", "message": message[:200]}


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
        remote = getattr(connection, "remote_address", None) or ("local", 0)
        conn_id = f"ipv4:{remote[0]}:{remote[1]}"  # a gRPC-style peer: limits count per address
        streams: dict[str, tuple[asyncio.Queue[gateway_pb2.PlayRequest | None], asyncio.Task[None]]]
        streams = {}
        watching: dict[str, asyncio.Task[None]] = {}  # table -> its read-only stream
        try:
            async for raw in connection:
                try:
                    message = json.loads(raw)
                    method = message["method"]
                    if not isinstance(method, str):
                        raise TypeError("method")
                except (ValueError, KeyError, TypeError, RecursionError):
                    # RecursionError: a deeply nested document is malformed, not a crash.
                    await connection.send(json.dumps({"error": _malformed("not a request")}))
                    continue
                token = str(message.get("token") or token)[:4096]
                if method == "Play":
                    if str(message.get("tableId") or "") in watching:
                        error = {"status": "PERMISSION_DENIED", "code": "WATCHING_ONLY"}
                        await connection.send(
                            json.dumps({"id": _request_id(message), "error": error})
                        )
                        continue
                    await self._play_message(connection, message, token, conn_id, streams)
                    continue
                if method == "Watch":
                    await self._watch_message(connection, message, token, conn_id, watching)
                    continue
                await connection.send(
                    json.dumps(await self._unary(method, message, WsContext(token, conn_id)))
                )
        except ConnectionClosed as gone:
            # A client dropping without a close frame is an ordinary goodbye, not an error.
            log.debug("websocket closed", extra={"code": gone.rcvd.code if gone.rcvd else None})
        finally:
            for queue, task in streams.values():
                await queue.put(None)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            for task in watching.values():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _play_message(
        self,
        connection: Any,
        message: dict[str, Any],
        token: str,
        conn_id: str,
        streams: dict[
            str, tuple[asyncio.Queue[gateway_pb2.PlayRequest | None], asyncio.Task[None]]
        ],
    ) -> None:
        request_id = _request_id(message)
        try:
            request = json_format.ParseDict(message.get("request", {}), gateway_pb2.PlayRequest())
        except (json_format.ParseError, RecursionError, TypeError) as exc:
            await connection.send(json.dumps({"id": request_id, "error": _malformed(str(exc))}))
            return
        for done in [t for t, (_, task) in streams.items() if task.done()]:
            del streams[done]
        if request.WhichOneof("kind") == "join":
            table_id = request.join.table_id
            if table_id in streams:
                error = {"status": "ALREADY_EXISTS", "code": "ALREADY_JOINED", "field": "join"}
            elif len(streams) >= MAX_STREAMS:
                error = {"status": "RESOURCE_EXHAUSTED", "code": "TOO_MANY_STREAMS"}
            else:
                # Bounded: a client sending faster than its commands are answered waits here,
                # and so does the reading of its socket (backpressure, not memory).
                queue: asyncio.Queue[gateway_pb2.PlayRequest | None] = asyncio.Queue(64)
                await queue.put(request)
                ctx = WsContext(token, conn_id, connection)
                task = asyncio.create_task(self._play(connection, queue, ctx, request_id))
                streams[table_id] = (queue, task)
                return
            error["message"] = f"table {table_id[:64]!r}"
            await connection.send(json.dumps({"id": request_id, "error": error}))
            return
        table_id = str(message.get("tableId") or "")
        if not table_id and len(streams) == 1:
            table_id = next(iter(streams))
        if table_id not in streams:
            code = "NOT_JOINED" if table_id else "NAME_THE_TABLE"
            error = {"status": "FAILED_PRECONDITION", "code": code, "field": "tableId"}
            await connection.send(json.dumps({"id": request_id, "error": error}))
            return
        await streams[table_id][0].put(request)

    async def _watch_message(
        self,
        connection: Any,
        message: dict[str, Any],
        token: str,
        conn_id: str,
        watching: dict[str, asyncio.Task[None]],
    ) -> None:
        """A read-only stream (I-35): its updates come like Play's; commands are refused."""
        request_id = _request_id(message)
        try:
            request = json_format.ParseDict(message.get("request", {}), gateway_pb2.WatchRequest())
        except (json_format.ParseError, RecursionError, TypeError) as exc:
            await connection.send(json.dumps({"id": request_id, "error": _malformed(str(exc))}))
            return
        for done in [t for t, task in watching.items() if task.done()]:
            del watching[done]
        if request.table_id in watching:
            error = {"status": "ALREADY_EXISTS", "code": "ALREADY_WATCHING", "field": "tableId"}
        elif len(watching) >= MAX_STREAMS:
            error = {"status": "RESOURCE_EXHAUSTED", "code": "TOO_MANY_STREAMS"}
        else:
            ctx = WsContext(token, conn_id, connection)
            watching[request.table_id] = asyncio.create_task(
                self._watch(connection, request, ctx, request_id)
            )
            return
        await connection.send(json.dumps({"id": request_id, "error": error}))

    async def _watch(
        self, connection: Any, request: gateway_pb2.WatchRequest, ctx: WsContext, request_id: Any
    ) -> None:
        try:
            await self.servicer.Watch(request, ctx)  # type: ignore[arg-type]
        except Aborted as exc:
            await connection.send(json.dumps({"id": request_id, "error": _error(ctx, exc)}))

    async def _unary(self, method: str, message: dict[str, Any], ctx: WsContext) -> dict[str, Any]:
        reply: dict[str, Any] = {"id": _request_id(message)}
        request_type = UNARY.get(method)
        if request_type is None:
            reply["error"] = {
                "status": "UNIMPLEMENTED",
                "code": "UNKNOWN_METHOD",
                "message": method[:64],
            }
            return reply
        try:
            request = json_format.ParseDict(message.get("request", {}), request_type())
            response = await getattr(self.servicer, method)(request, ctx)
            reply["response"] = json_format.MessageToDict(response)
        except Aborted as exc:
            reply["error"] = _error(ctx, exc)
        except (json_format.ParseError, RecursionError, TypeError) as exc:
            reply["error"] = _malformed(str(exc))
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
