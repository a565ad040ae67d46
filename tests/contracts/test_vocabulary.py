"""The engine's StrEnums and the protobuf enums stay in step (wire values are stable)."""

from __future__ import annotations

from enum import StrEnum

import pytest

from services.contracts.vocabulary import PROTO_ENUMS, from_proto, to_proto


@pytest.mark.parametrize("enum", list(PROTO_ENUMS), ids=lambda e: e.__name__)
def test_every_member_has_its_proto_value_and_back(enum: type[StrEnum]) -> None:
    wrapper, prefix = PROTO_ENUMS[enum]
    names = wrapper.DESCRIPTOR.values_by_name
    proto_names = {n.removeprefix(prefix) for n in names} - {"UNSPECIFIED"}
    assert proto_names == {m.name for m in enum}
    for member in enum:
        number = to_proto(member, enum)
        assert number > 0 and from_proto(number, enum) is member


def test_unknown_and_unset_values_are_none() -> None:
    enum = next(iter(PROTO_ENUMS))
    assert to_proto(None, enum) == 0
    assert from_proto(0, enum) is None and from_proto(999, enum) is None
