"""Bounds on what clients send: every string has a length limit, checked at the edge.

A field over its limit is INVALID_ARGUMENT naming the field, and nothing is forwarded, so no
service and no error ever carries unbounded client input (error texts are cut as well, see
services/common/errors.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from services.common.errors import InvalidArgument

DEFAULT_MAX = 64
# A code may come as a whole invite link; the account fields have their own bounds.
MAX_BY_FIELD = {
    "guest_name": 32, "code": 256, "device_id": 128, "email": 254, "password": 256,
    "display_name": 40, "refresh_token": 128,
    "text": 2000,  # a chat message: its own bound is BG_CHAT_MAX_CHARS (at most this)
}  # fmt: skip


def bounded(value: str, field: str, limit: int = DEFAULT_MAX) -> str:
    if len(value) > limit:
        raise InvalidArgument(
            "TOO_LONG", f"{field} is at most {limit} characters (got {len(value)})", field=field
        )
    return value


def table_id(value: str, field: str = "table_id") -> str:
    if not value:
        raise InvalidArgument("MISSING", f"{field} is required", field=field)
    return bounded(value, field)


def check(request: Message, bounds: Mapping[str, int] = MAX_BY_FIELD, prefix: str = "") -> None:
    """Every string in `request` (nested messages included) within its limit: `bounds` by
    field name, DEFAULT_MAX for the rest."""
    for fd, value in request.ListFields():
        name = prefix + fd.name
        if fd.type == FieldDescriptor.TYPE_STRING:
            limit = bounds.get(fd.name, DEFAULT_MAX)
            for item in value if _repeated(fd) else [value]:
                bounded(item, name, limit)
        elif fd.type == FieldDescriptor.TYPE_MESSAGE:
            if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
                continue  # no client request has maps
            for item in value if _repeated(fd) else [value]:
                check(item, bounds, name + ".")


def _repeated(fd: FieldDescriptor) -> bool:
    return bool(fd.is_repeated)


def reason(text: str) -> str:
    """Why an operator acts or a player reports: 1..200 characters, trimmed."""
    words = text.strip()
    if not 1 <= len(words) <= 200:
        raise InvalidArgument("REASON_REQUIRED", "say why, in 1..200 characters", field="reason")
    return words
