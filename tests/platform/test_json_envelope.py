"""The pages' JSON envelope (services/common/json_envelope.py), read alike by the gateway's
WebSocket and the operators' console: what is not one object is refused, an id is echoed only
when it can be, a token is kept for the connection."""

from __future__ import annotations

from services.common import json_envelope


def test_only_one_json_object_is_a_message() -> None:
    assert json_envelope.parsed('{"id": 1, "method": "GetBalance"}') == {
        "id": 1,
        "method": "GetBalance",
    }
    assert json_envelope.parsed(b'{"id": "a"}') == {"id": "a"}
    for raw in ("not json", "[1, 2]", '"a string"', "3", "[" * 100_000 + "]" * 100_000):
        assert json_envelope.parsed(raw) is None, raw[:20]


def test_an_id_is_echoed_only_as_a_number_or_a_short_string() -> None:
    assert json_envelope.request_id({"id": 7}) == 7
    assert json_envelope.request_id({"id": "x" * 64}) == "x" * 64
    for bad in ({"id": "x" * 65}, {"id": True}, {"id": 1.5}, {"id": [1]}, {}):
        assert json_envelope.request_id(bad) is None, bad


def test_a_token_sent_once_is_kept_and_bounded() -> None:
    assert json_envelope.token_of({"token": "t1"}, "") == "t1"
    assert json_envelope.token_of({}, "t1") == "t1"
    assert json_envelope.token_of({"token": ""}, "t1") == "t1"
    assert json_envelope.token_of({"token": "x" * 10_000}, "") == "x" * json_envelope.MAX_TOKEN
