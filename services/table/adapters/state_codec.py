"""Table state <-> bytes, for storage (one Redis key per table): a versioned binary codec.

Format 2: one version byte (0x02), then MessagePack of the state as nested arrays: each frozen
dataclass is the array of its fields in declaration order; enums are their string values; bytes
stay bytes. MessagePack only ever builds plain data (no pickle, nothing read can run code).

Evolution rule, as for protobuf field numbers: fields are only ever appended, with defaults; a
stored state with fewer fields decodes with the defaults, one with more (a newer writer) is
refused. `tests/table/test_state_codec.py` pins the field layout so a reorder fails the build.
Format 1 (zlib-compressed JSON objects, the first release's) is still read, never written.

The per-class encoders and decoders are built on first use and cached: encoding is on every
commit's path, decoding on every cache miss.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
import zlib
from collections.abc import Callable
from enum import Enum
from functools import cache, lru_cache
from operator import attrgetter
from typing import Any, get_args, get_origin

import msgpack

from engine.state import TableState

Fn = Callable[[Any], Any]
VERSION = 2


class CodecError(ValueError):
    """Stored bytes this build cannot read (corrupt, or written by a newer codec)."""


def _identity(value: Any) -> Any:
    return value


def _is_dataclass_type(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _optional_inner(hint: Any) -> Any:
    if get_origin(hint) in (types.UnionType, typing.Union):
        args = [a for a in get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else None
    return None


# -- encoding (dataclass -> nested tuples) ----------------------------------------------------


@cache
def _encoder(hint: Any) -> Fn | None:
    """A function making `hint`'s values MessagePack-ready, or None when they already are."""
    inner = _optional_inner(hint)
    if inner is not None:
        enc = _encoder(inner)
        return None if enc is None else (lambda v: None if v is None else enc(v))
    if get_origin(hint) is tuple:
        args = get_args(hint)
        item_hints = [args[0]] if len(args) == 2 and args[1] is Ellipsis else list(args)
        encs = [_encoder(a) for a in item_hints]
        if all(e is None for e in encs):
            return None
        if len(args) == 2 and args[1] is Ellipsis:
            item = encs[0]
            assert item is not None
            return lambda v: [item(x) for x in v]
        return lambda v: [x if e is None else e(x) for e, x in zip(encs, v, strict=True)]
    if _is_dataclass_type(hint):
        hints = typing.get_type_hints(hint)
        fields = dataclasses.fields(hint)
        getter = attrgetter(*(f.name for f in fields))
        nested = [(i, e) for i, f in enumerate(fields) if (e := _encoder(hints[f.name]))]
        if not nested:
            return lambda v: getter(v)

        def encode(value: Any) -> list[Any]:
            out = list(getter(value))
            for i, enc in nested:
                out[i] = enc(out[i])
            return out

        return encode
    return None  # int, str, bool, bytes, enums (str subclasses) pack as they are


def dumps(state: TableState) -> bytes:
    encode = _encoder(TableState)
    assert encode is not None
    packed: bytes = msgpack.packb(encode(state), use_bin_type=True)
    return bytes((VERSION,)) + packed


# -- decoding (nested tuples -> dataclasses) --------------------------------------------------


@cache
def _decoder(hint: Any) -> Fn | None:
    """A function rebuilding `hint`'s value from MessagePack data, or None when it is already."""
    inner = _optional_inner(hint)
    if inner is not None:
        dec = _decoder(inner)
        return None if dec is None else (lambda raw: None if raw is None else dec(raw))
    if get_origin(hint) is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _decoder(args[0])
            return None if item is None else (lambda raw: tuple(item(x) for x in raw))
        items = [_decoder(a) for a in args]
        if all(d is None for d in items):
            return None
        return lambda raw: tuple(x if d is None else d(x) for d, x in zip(items, raw, strict=True))
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    if _is_dataclass_type(hint):
        hints = typing.get_type_hints(hint)
        fields = dataclasses.fields(hint)
        decs = [(i, d) for i, f in enumerate(fields) if (d := _decoder(hints[f.name]))]
        n = len(fields)
        name = hint.__name__

        def build(raw: Any) -> Any:
            if len(raw) > n:
                raise CodecError(f"{name} has {len(raw)} fields; this build knows {n}")
            values = list(raw)
            for i, dec in decs:
                if i < len(values):
                    values[i] = dec(values[i])
            return hint(*values)

        if not any(_is_dataclass_type(hints[f.name]) for f in fields):
            # Leaf values (rules options, positions) repeat across tables and reads; they are
            # immutable, so one decoded instance serves every equal input (options validate once).
            return lru_cache(maxsize=1024)(build)
        return build
    return None


def loads(data: bytes) -> TableState:
    if not data:
        raise CodecError("empty state")
    if data[0] == VERSION:
        try:
            raw = msgpack.unpackb(data[1:], use_list=False, raw=False)
        except (ValueError, msgpack.ExtraData) as exc:
            raise CodecError(f"corrupt state: {exc}") from None
        decode = _decoder(TableState)
        assert decode is not None
        try:
            state: TableState = decode(raw)
        except (TypeError, ValueError) as exc:
            raise CodecError(f"state does not fit this build: {exc}") from None
        return state
    if data[0] == 0x78:  # a zlib stream: format 1
        return _loads_v1(zlib.decompress(data))
    raise CodecError(f"unknown state format {data[0]}")


# -- format 1 (read only) -----------------------------------------------------------------------


@cache
def _v1_decoder(hint: Any) -> Fn:
    origin = get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        inner = _v1_decoder(next(a for a in get_args(hint) if a is not type(None)))
        return lambda raw: None if raw is None else inner(raw)
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _v1_decoder(args[0])
            return lambda raw: tuple(item(v) for v in raw)
        items = [_v1_decoder(a) for a in args]
        return lambda raw: tuple(d(v) for d, v in zip(items, raw, strict=True))
    if _is_dataclass_type(hint):
        hints = typing.get_type_hints(hint)
        fields = [(f.name, _v1_decoder(hints[f.name])) for f in dataclasses.fields(hint)]
        return lambda raw: hint(**{n: d(raw[n]) for n, d in fields if n in raw})
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    if hint is bytes:
        return bytes.fromhex
    return _identity


def _loads_v1(data: bytes) -> TableState:
    state: TableState = _v1_decoder(TableState)(json.loads(data))
    return state
