"""Engine StrEnums <-> protobuf enums, by name: `Phase.AWAIT_ROLL` is `PHASE_AWAIT_ROLL`.

The proto enum numbers are the wire values; the engine's string values are what code, logs and
metrics use. `tests/contracts/test_vocabulary.py` holds every pair in step, so a new engine member
without its proto value (or the reverse) fails the build instead of the wire.
"""

from __future__ import annotations

from enum import StrEnum
from functools import cache
from typing import Any, TypeVar

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from bg.common.v1 import errors_pb2
from bg.events.v1 import events_pb2
from engine import vocabulary as v

E = TypeVar("E", bound=StrEnum)
# The phases of a table that takes no more commands (wire values).
FINISHED = (events_pb2.Phase.PHASE_MATCH_OVER, events_pb2.Phase.PHASE_CLOSED)

PROTO_ENUMS: dict[type[StrEnum], tuple[EnumTypeWrapper, str]] = {
    v.Phase: (events_pb2.Phase, "PHASE_"),
    v.EndReason: (events_pb2.EndReason, "END_REASON_"),
    v.GameResult: (events_pb2.GameResult, "GAME_RESULT_"),
    v.DeadlineKind: (events_pb2.DeadlineKind, "DEADLINE_KIND_"),
    v.PassReason: (events_pb2.PassReason, "PASS_REASON_"),
    v.DropReason: (events_pb2.DropReason, "DROP_REASON_"),
    v.RejectionCode: (errors_pb2.RejectionCode, "REJECTION_CODE_"),
}


@cache
def _to_number(enum: type[StrEnum]) -> dict[str, int]:
    wrapper, prefix = PROTO_ENUMS[enum]
    return {m.value: wrapper.Value(prefix + m.name) for m in enum}


@cache
def _from_number(enum: type[StrEnum]) -> dict[int, Any]:
    return {n: enum(value) for value, n in _to_number(enum).items()}


def to_proto(member: StrEnum | None, enum: type[StrEnum]) -> Any:
    """The proto number of `member` (0, UNSPECIFIED, for None). Typed Any because the
    generated stubs type each enum field as its own int subclass."""
    return 0 if member is None else _to_number(enum)[member]


def from_proto(number: int, enum: type[E]) -> E | None:
    """The engine member for a proto number; None for UNSPECIFIED or a value this build does
    not know (a newer producer): callers treat it as "not one of mine", never crash."""
    found: E | None = _from_number(enum).get(number)
    return found
