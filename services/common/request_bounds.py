"""Bounds on what callers send: every string of a request within its length limit, checked at
the edge that takes it from outside (the gateway for players, the identity service for
operators). A field over its limit is INVALID_ARGUMENT TOO_LONG naming the field, and nothing
is done, so no service and no error ever carries unbounded input."""

from __future__ import annotations

from collections.abc import Mapping

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from services.common.errors import InvalidArgument


def bounded(value: str, field: str, limit: int) -> str:
    if len(value) > limit:
        raise InvalidArgument(
            "TOO_LONG", f"{field} is at most {limit} characters (got {len(value)})", field=field
        )
    return value


def required(value: str, field: str, limit: int) -> str:
    """A field the request must name: MISSING when empty, then within its limit."""
    if not value:
        raise InvalidArgument("MISSING", f"{field} is required", field=field)
    return bounded(value, field, limit)


def check_strings(
    request: Message, bounds: Mapping[str, int], default: int, prefix: str = ""
) -> None:
    """Every string in `request` (nested messages included) within its limit: `bounds` by
    field name, `default` for the rest."""
    for fd, value in request.ListFields():
        name = prefix + fd.name
        if fd.type == FieldDescriptor.TYPE_STRING:
            limit = bounds.get(fd.name, default)
            for item in value if fd.is_repeated else [value]:
                bounded(item, name, limit)
        elif fd.type == FieldDescriptor.TYPE_MESSAGE:
            if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
                continue  # no request from outside has maps
            for item in value if fd.is_repeated else [value]:
                check_strings(item, bounds, default, name + ".")


def reason(text: str, limit: int) -> str:
    """Why an operator acts or a player reports: 1..`limit` characters, trimmed."""
    words = text.strip()
    if not words:
        raise InvalidArgument(
            "REASON_REQUIRED", f"say why, in 1..{limit} characters", field="reason"
        )
    return bounded(words, "reason", limit)
