"""The operators' web console (issue 61, item 5): its page (services/identity/console/) and a
WebSocket that carries the admin API's calls, on BG_CONSOLE_PORT beside the identity service's
gRPC port.

The page signs in with an operator's name and key (`OperatorLogin`) and sends each call as
  {"id": 1, "method": "ListFlags", "request": {...}, "token": "<operator token>"}
answered {"id": 1, "response": {...}} or {"id": 1, "error": {"status", "code", "message",
"field"}}: the protobuf JSON mapping of bg.admin.v1.AdminService, as the gateway's WebSocket
does for players (docs/protocol.md). Each call goes to this replica's own AdminService over
loopback gRPC with the token as its bearer, so the console has exactly the API's checks: the
operator's token and rights, the rate limits, the audit row. Only AdminService's methods pass.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.message import Message
from websockets.exceptions import ConnectionClosed

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.common.v1 import errors_pb2
from services.common import json_envelope
from wire.errors import error_from

ADMIN = admin_pb2.DESCRIPTOR.services_by_name["AdminService"]
MAX_MESSAGE = 64 * 1024
CALL_TIMEOUT_S = 60.0


def _error(status: str, code: str, message: str, field: str = "") -> dict[str, Any]:
    return {"status": status, "code": code, "message": message[:200], "field": field}


class Console:
    """One WebSocket connection's calls, each handed to the AdminService on `channel`."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.admin = admin_pb2_grpc.AdminServiceStub(channel)

    async def handle(self, connection: Any) -> None:
        with contextlib.suppress(ConnectionClosed):  # the page went away: nothing to answer
            await self._serve(connection)

    async def _serve(self, connection: Any) -> None:
        token = ""
        async for raw in connection:
            message = json_envelope.parsed(raw)
            if message is None:
                await connection.send(json.dumps({"id": None, "error": _malformed("not JSON")}))
                continue
            token = json_envelope.token_of(message, token)
            reply = await self.call(message.get("method"), message.get("request") or {}, token)
            await connection.send(json.dumps({"id": json_envelope.request_id(message), **reply}))

    async def call(self, method: Any, body: Any, token: str) -> dict[str, Any]:
        """One admin call: {"response": ...} or {"error": ...}."""
        found = ADMIN.methods_by_name.get(method) if isinstance(method, str) else None
        if found is None:
            return {"error": _malformed("no such operators' call", "method")}
        request: Message = message_factory.GetMessageClass(found.input_type)()
        try:
            json_format.ParseDict(body, request)
        except (json_format.ParseError, TypeError, ValueError) as exc:
            return {"error": _malformed(str(exc), "request")}
        metadata = [("authorization", f"Bearer {token}")] if token else []
        try:
            reply = await getattr(self.admin, method)(
                request, metadata=metadata, timeout=CALL_TIMEOUT_S
            )
        except grpc.aio.AioRpcError as exc:
            typed = error_from(exc) or errors_pb2.Error(
                code="UNAVAILABLE", message=str(exc.details() or "")
            )
            return {"error": _error(exc.code().name, typed.code, typed.message, typed.field)}
        return {"response": json_format.MessageToDict(reply)}


def _malformed(message: str, field: str = "") -> dict[str, Any]:
    return _error("INVALID_ARGUMENT", "MALFORMED", message, field)
