"""Table state <-> compact JSON bytes, for storage (one Redis key per table).

A generic codec for the engine's frozen dataclasses: tuples become lists, enums their values,
bytes hex; decoding follows the type hints, so adding a field needs no codec change. The
encoder and decoder for each type are built once and cached: reading state is on every
command's path.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable
from enum import Enum
from functools import cache
from typing import Any, get_args, get_origin

from engine.state import TableState

Fn = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


@cache
def _encoder(cls: type) -> Fn:
    names = [f.name for f in dataclasses.fields(cls)]

    def encode(value: Any) -> dict[str, Any]:
        return {name: _encode(getattr(value, name)) for name in names}

    return encode


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, int | str | float):
        return value.value if isinstance(value, Enum) else value
    if isinstance(value, tuple | list):
        if value and type(value[0]) is int:
            return list(value)
        return [_encode(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encoder(type(value))(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return [[_encode(k), _encode(v)] for k, v in value.items()]
    raise TypeError(f"cannot encode {type(value).__name__}")


@cache
def _decoder(hint: Any) -> Fn:
    origin = get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        inner = _decoder(next(a for a in get_args(hint) if a is not type(None)))
        return lambda raw: None if raw is None else inner(raw)
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _decoder(args[0])
            if item is _identity:
                return tuple
            return lambda raw: tuple(item(v) for v in raw)
        items = [_decoder(a) for a in args]
        if all(d is _identity for d in items):
            return tuple
        return lambda raw: tuple(d(v) for d, v in zip(items, raw, strict=True))
    if origin is typing.Literal or hint is Any or hint in (int, str, float, bool):
        return _identity
    if isinstance(hint, type):
        if dataclasses.is_dataclass(hint):
            hints = typing.get_type_hints(hint)
            fields = [(f.name, _decoder(hints[f.name])) for f in dataclasses.fields(hint)]

            def build(raw: dict[str, Any]) -> Any:
                return hint(**{name: dec(raw[name]) for name, dec in fields if name in raw})

            return build
        if issubclass(hint, Enum):
            return hint
        if hint is bytes:
            return bytes.fromhex
    return _identity


def dumps(state: TableState) -> bytes:
    return json.dumps(_encode(state), separators=(",", ":")).encode()


def loads(data: bytes) -> TableState:
    result: TableState = _decoder(TableState)(json.loads(data))
    return result
