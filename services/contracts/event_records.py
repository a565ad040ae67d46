"""Kafka records of `table-events`: one per commit, its events in a TableEventBatch, with
headers naming their kinds (events.proto). Built from the serialized events the table stream
holds without decoding them (a repeated message field is its items' bytes, each tagged and
length-prefixed), and read back into events, skipping records of no interest unread."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bg.events.v1 import events_pb2

BATCH = "bg-batch"
KINDS = "bg-kinds"
Headers = list[tuple[str, bytes]]
_EVENTS_FIELD = b"\x0a"  # field 1, length-delimited


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def commit_record(events: Sequence[bytes], kinds: Sequence[str]) -> tuple[bytes, Headers]:
    """The record of one commit: (value, headers)."""
    value = b"".join(_EVENTS_FIELD + _varint(len(e)) + e for e in events)
    headers = [(BATCH, b"1"), (KINDS, ",".join(kinds).encode())]
    return value, headers


def kinds_of(headers: Iterable[tuple[str, bytes]] | None) -> set[str] | None:
    """The kinds a batch record says it holds; None when it does not say (read it all)."""
    for name, value in headers or ():
        if name == KINDS:
            return set(bytes(value).decode().split(",")) if value else set()
    return None


def table_events(
    value: bytes, headers: Iterable[tuple[str, bytes]] | None, wanted: frozenset[str] | None = None
) -> list[events_pb2.TableEvent]:
    """The events a record carries (a batch, or one event from an earlier release); [] when its
    kinds header shows none of `wanted` (when given). Raises on bytes that do not decode."""
    listed = list(headers or ())
    if any(name == BATCH for name, _ in listed):
        kinds = kinds_of(listed)
        if wanted is not None and kinds is not None and not kinds & wanted:
            return []
        batch = events_pb2.TableEventBatch()
        batch.ParseFromString(value)
        return list(batch.events)
    event = events_pb2.TableEvent()
    event.ParseFromString(value)
    return [event]
