"""The Play protocol's edges through a real gateway: bounded inputs (typed errors naming the
field, nothing forwarded), WebSocket robustness (deep nesting, a second join multiplexed, a
client vanishing without a close frame), and resuming from a seq sees every event once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.play_wire import CommandRefused, PlaySession
from services.common.errors import error_from
from tests.cluster.test_gateway import _players
from tests.helpers import error_of

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("size", [65, 10_000, 100_000])
async def test_oversized_ids_are_invalid_argument_naming_the_field(
    cluster: dict[str, Any],
    size: int,
) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        (ann,) = await _players(cluster, ch, "ann", grant=0)
        long_id = "x" * size
        cases: list[tuple[Any, Any, str]] = [
            (ann.stub.GetView, gateway_pb2.ViewRequest(table_id=long_id), "table_id"),
            (ann.stub.GetTable, matchmaking_pb2.TableRequest(table_id=long_id), "table_id"),
            (ann.stub.JoinByCode, matchmaking_pb2.JoinByCodeRequest(code=long_id), "code"),
        ]
        for call, request, field in cases:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call(request, metadata=ann.auth)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()
            detail = error_from(err.value)
            assert detail is not None and detail.field == field
            assert detail.code in ("TOO_LONG", "INVALID_CODE")  # a 65-character code is no code
            assert len(err.value.details() or "") < 400  # never the input echoed back
        session = PlaySession(ann.stub, long_id, ann.auth)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await session.open(timeout_s=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_of(err.value).field == "join.table_id"
        await session.close()


def _newer_than(seq: int) -> Callable[[table_pb2.TableView], bool]:
    return lambda view: view.seq > seq


async def test_resuming_from_a_seq_sees_every_event_once(
    cluster: dict[str, Any],
) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob", grant=0)
        table = await ann.create_table(table_pb2.TableOptions(profile="casual"))
        await bob.join(table.code)
        await ann.stub.StartTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
        )
        play = asyncio.create_task(ann.play(table.table_id, 120))
        seen: list[int] = []
        async with PlaySession(bob.stub, table.table_id, bob.auth) as first:
            played = 0
            while played < 3:  # play a few turns, then drop the stream
                v = await first.wait_for(lambda v: v.decider == v.seat, 30)
                cmd = bob.decide(v)
                if cmd is None:
                    continue
                try:
                    await first.send(cmd, v.seq)
                except CommandRefused as refused:  # ann arrived meanwhile (I-41): look again
                    assert refused.code == "STALE_SEQ"
                    await first.wait_for(_newer_than(v.seq), 30)
                    continue
                played += 1
            seen = [e.seq for e in first.events]
        assert seen == list(range(1, len(seen) + 1))  # every event once, in order
        async with PlaySession(bob.stub, table.table_id, bob.auth, from_seq=seen[-1]) as again:
            final = await again.play_out(bob.decide, 120)
            resumed = [e.seq for e in again.events]
        await play
        assert resumed[0] == seen[-1] + 1  # nothing missed, nothing repeated
        assert resumed == list(range(seen[-1] + 1, final.seq + 1))


async def _reply(ws: Any, request_id: int) -> dict[str, Any]:
    """The answer to request `request_id`, skipping the pushed updates before it."""
    while True:
        message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if message.get("id") == request_id:
            return message


async def test_websocket_edges(cluster: dict[str, Any]) -> None:
    from websockets.asyncio.client import connect

    state = json.loads((Path(cluster["data"]) / "cluster.json").read_text())
    ws_url = next(s["ws"] for s in state["services"] if s["name"] == "gateway")
    async with connect(ws_url) as ws:
        await ws.send("[" * 5000 + "]" * 5000)  # deeply nested: malformed, not a crash
        reply = json.loads(await ws.recv())
        assert reply["error"]["code"] == "MALFORMED" and reply["id"] is None
        await ws.send(json.dumps({"id": 1, "method": "Login", "request": {"guestName": "w"}}))
        login = json.loads(await ws.recv())["response"]
        token = login["token"]
        tables = []
        for n in range(2):
            await ws.send(
                json.dumps(
                    {
                        "id": 10 + n,
                        "method": "CreateTable",
                        "token": token,
                        "request": {"options": {"profile": "casual", "level": "easy"}},
                    }
                )
            )
            tables.append(json.loads(await ws.recv())["response"]["tableId"])
        for n, table_id in enumerate(tables):  # two Play streams on one connection
            join = {"join": {"tableId": table_id}}
            await ws.send(json.dumps({"id": 20 + n, "method": "Play", "request": join}))
        pushed: set[str] = set()
        while pushed != set(tables):
            message = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if message.get("push") == "update":
                pushed.add(message["update"]["tableId"])
        # A command that names no table while two are joined: a typed error, not silence.
        roll = {"command": {"commandId": "r1", "command": {"roll": {}}}}
        await ws.send(json.dumps({"id": 30, "method": "Play", "request": roll}))
        assert (await _reply(ws, 30))["error"]["code"] == "NAME_THE_TABLE"
        again = {"join": {"tableId": tables[0]}}
        await ws.send(json.dumps({"id": 31, "method": "Play", "request": again}))
        assert (await _reply(ws, 31))["error"]["code"] == "ALREADY_JOINED"
        # Issue 60, item 1: done with a table, its stream ends (and the player's presence there):
        # its commands are NOT_JOINED, a second end says none was open, a join opens it again.
        end = {"tableId": tables[0]}
        await ws.send(json.dumps({"id": 32, "method": "EndStream", "request": end}))
        assert (await _reply(ws, 32))["response"] == {"ended": True}
        roll_there = {"id": 33, "method": "Play", "tableId": tables[0], "request": roll}
        await ws.send(json.dumps(roll_there))
        assert (await _reply(ws, 33))["error"]["code"] == "NOT_JOINED"
        await ws.send(json.dumps({"id": 34, "method": "EndStream", "request": end}))
        assert (await _reply(ws, 34))["response"] == {"ended": False}
        await ws.send(json.dumps({"id": 35, "method": "EndStream", "request": {}}))
        refused = (await _reply(ws, 35))["error"]
        assert (refused["code"], refused["field"]) == ("MALFORMED", "tableId")
        await ws.send(json.dumps({"id": 36, "method": "Play", "request": again}))
        assert (await _reply(ws, 36))["response"]["tableId"] == tables[0]
        ws.transport.abort()  # gone without a close frame
    await asyncio.sleep(1.0)
    log = (Path(cluster["data"]) / "up.log").read_text()
    assert "ConnectionClosedError" not in log and "connection handler failed" not in log
