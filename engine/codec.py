"""Table state <-> compact JSON bytes, for storage (one Redis key per table).

A generic encoder for the engine's frozen dataclasses: tuples become lists, enums their values,
bytes hex; decoding follows the type hints, so adding a field needs no codec change.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, TypeVar, get_args, get_origin

from engine.state import TableState

T = TypeVar("T")


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple | list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return [[_encode(k), _encode(v)] for k, v in value.items()]
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(hint: Any, raw: Any) -> Any:
    origin = get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        if raw is None:
            return None
        inner = [a for a in get_args(hint) if a is not type(None)]
        return _decode(inner[0], raw)
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v) for v in raw)
        return tuple(_decode(a, v) for a, v in zip(args, raw, strict=True))
    if origin is typing.Literal or hint is Any:
        return raw
    if isinstance(hint, type):
        if dataclasses.is_dataclass(hint):
            hints = _hints(hint)
            return hint(**{k: _decode(hints[k], v) for k, v in raw.items()})
        if issubclass(hint, Enum):
            return hint(raw)
        if hint is bytes:
            return bytes.fromhex(raw)
    return raw


def dumps(state: TableState) -> bytes:
    return json.dumps(_encode(state), separators=(",", ":")).encode()


def loads(data: bytes) -> TableState:
    result: TableState = _decode(TableState, json.loads(data))
    return result
