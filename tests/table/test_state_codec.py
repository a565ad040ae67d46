"""The binary state codec: round trips, the v1 (JSON) format still read, bad bytes refused,
and the field layout pinned (fields are only ever appended)."""

from __future__ import annotations

import dataclasses

import msgpack
import pytest

from engine import profiles
from engine.machine import new_match
from engine.state import MatchState, TableState
from services.table.adapters import state_codec as codec

# Append-only: a new field goes at the end, with a default. Reordering breaks stored tables.
MATCH_FIELDS = [
    "options", "fingerprint", "phase", "sides", "turn", "game_no", "score", "cube",
    "cube_owner", "crawford_game", "crawford_done", "dice", "play", "phase_started_ms",
    "clock_deadline_ms", "paused_remaining_ms", "warned", "boosts_used", "double_withdrawn",
    "auto_roll", "away_since_ms", "away_expired", "last_activity_ms", "last_winner", "games",
    "rolls", "last_turn", "winner", "end_reason", "ended_ms", "rematch_offered_by",
    "rematch_agreed",
]  # fmt: skip


def _state() -> TableState:
    return new_match(profiles.wagered(1, 500, True), bytes(range(16)), 1_000).state


def test_round_trip_and_version_byte() -> None:
    state = _state()
    data = codec.dumps(state)
    assert data[0] == codec.VERSION
    assert codec.loads(data) == state


def test_field_layout_is_append_only() -> None:
    assert [f.name for f in dataclasses.fields(MatchState)] == MATCH_FIELDS


def test_fewer_fields_take_defaults_more_are_refused() -> None:
    state = _state()
    raw = msgpack.unpackb(codec.dumps(state)[1:], use_list=False)
    match = list(raw[0])
    shorter = (tuple(match[:-1]), raw[1])  # written before `rematch_agreed` existed
    old = codec.loads(bytes((codec.VERSION,)) + msgpack.packb(shorter))
    assert old.match.rematch_agreed is False and old.match.phase is state.match.phase
    longer = ((*match, 1), raw[1])
    with pytest.raises(codec.CodecError):
        codec.loads(bytes((codec.VERSION,)) + msgpack.packb(longer))


@pytest.mark.parametrize("data", [b"", b"\x07abc", b"\x02\xc1", b"\x02\x92\x01"])
def test_bad_bytes_are_a_codec_error(data: bytes) -> None:
    with pytest.raises(codec.CodecError):
        codec.loads(data)


def test_format_1_is_still_read() -> None:
    import json
    import zlib

    state = _state()

    def plain(value: object) -> object:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        if isinstance(value, bytes):
            return value.hex()
        return value

    v1 = zlib.compress(json.dumps(plain(state)).encode())
    assert codec.loads(v1) == state
