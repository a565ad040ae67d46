"""The gateway's lobby calls that could seat a player twice carry a request id, so the balanced
channel's retry of one on another matchmaking replica answers the first call's table."""

from __future__ import annotations

from bg.matchmaking.v1 import matchmaking_pb2
from services.gateway.lobby_handlers import _retry_safe


def test_a_request_without_an_id_gets_one_and_a_given_id_is_kept() -> None:
    bare: list[
        matchmaking_pb2.CreateTableRequest
        | matchmaking_pb2.JoinByCodeRequest
        | matchmaking_pb2.QuickMatchRequest
    ] = [
        matchmaking_pb2.CreateTableRequest(player_id="p"),
        matchmaking_pb2.JoinByCodeRequest(player_id="p", code="ABCDEF"),
        matchmaking_pb2.QuickMatchRequest(player_id="p"),
    ]
    for request in bare:
        _retry_safe(request)
        assert request.request_id.startswith("gw-") and 1 <= len(request.request_id) <= 64
    assert len({r.request_id for r in bare}) == 3  # one per call
    given = matchmaking_pb2.QuickMatchRequest(player_id="p", request_id="mine-1")
    _retry_safe(given)
    assert given.request_id == "mine-1"
