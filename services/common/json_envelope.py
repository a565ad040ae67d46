"""The JSON envelope the browser pages speak over a WebSocket, the players' (the gateway) and the
operators' (the identity service's console) alike: one object a message,
`{"id", "method", "request", "token"?}`, whose answer echoes the id; a token sent once is kept
for the connection."""

from __future__ import annotations

import json
from typing import Any

RequestId = int | str | None
MAX_ID = 64  # characters of a string id echoed back
MAX_TOKEN = 4096


def parsed(raw: str | bytes) -> dict[str, Any] | None:
    """The message as an object, or None when it is not one (a deeply nested document is
    malformed, not a crash)."""
    try:
        message = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def request_id(message: dict[str, Any]) -> RequestId:
    """The client's request id as it will be echoed: a number or a short string, else none."""
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value if isinstance(value, int) or len(value) <= MAX_ID else None


def token_of(message: dict[str, Any], kept: str) -> str:
    """The message's token, or the one the connection sent before."""
    return str(message.get("token") or kept)[:MAX_TOKEN]
