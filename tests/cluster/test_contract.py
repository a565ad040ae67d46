"""Issue 24: the client contract as docs/protocol.md states it, over gRPC and the WebSocket, on
the shared cluster (each test's players are its own). The clients are written from the docs
(tests/cluster/contract_clients.py); each test names the docs' section and the issue's item it
holds the cluster to. The faults of items 9-11 are in test_contract_faults.py."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from tests.cluster.conftest import SECRET
from tests.cluster.contract_clients import GrpcPlayer, WsClient, fund, refusal, ws_url

pytestmark = pytest.mark.e2e
CASUAL_VS_CPU = table_pb2.TableOptions(profile="casual", level="easy")
BET200 = table_pb2.TableOptions(profile="wagered", match_length=1, bet=200)


@pytest.fixture
async def gw(cluster: dict[str, Any]) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(
        cluster["gateway"], options=[("grpc.use_local_subchannel_pool", 1)]
    ) as channel:
        yield channel


@pytest.fixture
async def ops(cluster: dict[str, Any]) -> AsyncIterator[grpc.aio.Channel]:
    """The operators' plane: the identity service's AdminService."""
    async with grpc.aio.insecure_channel(cluster["identity"]) as channel:
        yield channel


@pytest.fixture
async def ws(cluster: dict[str, Any]) -> AsyncIterator[Any]:
    """A factory of WebSocket clients, each on its own connection, closed after the test."""
    from websockets.asyncio.client import connect

    opened: list[tuple[Any, WsClient]] = []

    async def make() -> WsClient:
        connection = await connect(ws_url(cluster))
        client = WsClient(connection)
        opened.append((connection, client))
        return client

    yield make
    for connection, client in opened:
        await client.close()
        await connection.close()


def device_id() -> str:
    return secrets.token_urlsafe(32)


# -- item 1: "Logging in": a refresh retried within its window answers the same pair -----------


async def test_a_refresh_retried_in_its_window_answers_the_same_pair_over_grpc(
    gw: grpc.aio.Channel,
) -> None:
    player = GrpcPlayer(gw)
    login = await player.stub.Login(
        gateway_pb2.LoginRequest(device_id=device_id(), display_name="r" + secrets.token_hex(4))
    )
    first = await player.stub.Refresh(gateway_pb2.RefreshRequest(refresh_token=login.refresh_token))
    await asyncio.sleep(2.0)  # the repro: the same token again 2 s later
    again = await player.stub.Refresh(gateway_pb2.RefreshRequest(refresh_token=login.refresh_token))
    assert again == first  # the same token, refresh token and expiries: one chain
    # The one chain goes on: r1 gives r2; r0 once more still answers r1, never a second chain.
    second = await player.stub.Refresh(
        gateway_pb2.RefreshRequest(refresh_token=first.refresh_token)
    )
    assert second.refresh_token not in (first.refresh_token, login.refresh_token)
    third = await player.stub.Refresh(gateway_pb2.RefreshRequest(refresh_token=login.refresh_token))
    assert third == first
    balance = await player.stub.GetBalance(
        gateway_pb2.BalanceRequest(), metadata=[("authorization", f"Bearer {second.token}")]
    )
    assert balance.balance >= 0


async def test_a_refresh_retried_in_its_window_answers_the_same_pair_over_websocket(
    ws: Any,
) -> None:
    client = await ws()
    login = await client.ok(
        "Login", {"deviceId": device_id(), "displayName": "w" + secrets.token_hex(4)}
    )
    first = await client.ok("Refresh", {"refreshToken": login["refreshToken"]})
    await asyncio.sleep(1.0)
    assert await client.ok("Refresh", {"refreshToken": login["refreshToken"]}) == first
    client.every_request_answered_once()


# -- item 2: "Watching": LobbyTable.watchable says what Watch does -------------------------------


async def test_a_private_players_table_is_not_watchable_anywhere(
    gw: grpc.aio.Channel, ws: Any
) -> None:
    host, guest, watcher = [await GrpcPlayer(gw).login() for _ in range(3)]
    await host.stub.SetPrivacy(
        gateway_pb2.PrivacyRequest(hide_from_spectators=True), metadata=host.auth
    )
    made = await host.stub.CreateTable(
        matchmaking_pb2.CreateTableRequest(
            options=table_pb2.TableOptions(profile="casual"), public=True
        ),
        metadata=host.auth,
    )
    assert made.watchable is False  # was true on main: the field lied
    await guest.stub.JoinByCode(
        matchmaking_pb2.JoinByCodeRequest(code=made.code), metadata=guest.auth
    )
    await host.stub.StartTable(
        matchmaking_pb2.TableRequest(table_id=made.table_id), metadata=host.auth
    )
    for who in (host, guest, watcher):
        shown = await who.stub.GetTable(
            matchmaking_pb2.TableRequest(table_id=made.table_id), metadata=who.auth
        )
        assert shown.status == "dealt" and shown.watchable is False
    live = await watcher.stub.ListTables(
        matchmaking_pb2.ListTablesRequest(live=True, limit=200), metadata=watcher.auth
    )
    assert made.table_id not in [t.table_id for t in live.tables]
    stream = watcher.stub.Watch(
        gateway_pb2.WatchRequest(table_id=made.table_id), metadata=watcher.auth
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stream.read()
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert refusal(refused.value).code == "NOT_WATCHABLE"
    # The same over the WebSocket: the field is there (defaults are printed) and false.
    client = await ws()
    await client.login()
    table = await client.ok("GetTable", {"tableId": made.table_id})
    assert table["watchable"] is False
    watch = await client.call("Watch", {"tableId": made.table_id})
    assert watch["error"]["code"] == "NOT_WATCHABLE"
    assert watch["error"]["status"] == "PERMISSION_DENIED"
    # A table of players who do not hide is watchable, as the docs say of public tables.
    other = await GrpcPlayer(gw).login()
    open_table = await other.stub.CreateTable(
        matchmaking_pb2.CreateTableRequest(
            options=table_pb2.TableOptions(profile="casual"), public=True
        ),
        metadata=other.auth,
    )
    assert open_table.watchable is True
    client.every_request_answered_once()


# -- item 3: every string from outside has a bound, operators' included ------------------------


async def test_operators_strings_are_bounded_and_named(
    cluster: dict[str, Any], ops: grpc.aio.Channel, gw: grpc.aio.Channel
) -> None:
    admin = admin_pb2_grpc.AdminServiceStub(ops)
    operator = cluster["admin"]
    for request, field in (
        (admin_pb2.OperatorLoginRequest(name="n" * 10_000, key=operator["key"]), "name"),
        (admin_pb2.OperatorLoginRequest(name=operator["name"], key="k" * 100_000), "key"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await admin.OperatorLogin(request)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        error = refusal(refused.value)
        assert (error.code, error.field) == ("TOO_LONG", field)
    login = await admin.OperatorLogin(
        admin_pb2.OperatorLoginRequest(name=operator["name"], key=operator["key"])
    )
    auth = [("authorization", f"Bearer {login.token}")]
    target = "g" + secrets.token_hex(8)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await admin.LookupPlayer(
            admin_pb2.LookupPlayerRequest(player_id=target, reason="r" * 100_000), metadata=auth
        )
    error = refusal(refused.value)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.code, error.field) == ("TOO_LONG", "reason")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await admin.LookupPlayer(
            admin_pb2.LookupPlayerRequest(player_id="p" * 65, reason="why"), metadata=auth
        )
    assert refusal(refused.value).field == "player_id"
    audit = await admin.ListAudit(admin_pb2.ListAuditRequest(target=target), metadata=auth)
    rows = [e for e in audit.entries if e.action == "lookup"]
    assert rows and all(e.outcome == "TOO_LONG" and len(e.reason) <= 200 for e in rows)


# -- item 4: "The stream": every command's answer is tied to what was sent ----------------------


async def test_an_oversized_command_id_is_answered_by_its_place_over_grpc(
    gw: grpc.aio.Channel,
) -> None:
    player = await GrpcPlayer(gw).login()
    table = await player.stub.CreateTable(
        matchmaking_pb2.CreateTableRequest(options=CASUAL_VS_CPU), metadata=player.auth
    )
    requests: asyncio.Queue[gateway_pb2.PlayRequest | None] = asyncio.Queue()

    async def sent() -> AsyncIterator[gateway_pb2.PlayRequest]:
        while (item := await requests.get()) is not None:
            yield item

    stream = player.stub.Play(sent(), metadata=player.auth)
    await requests.put(gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table.table_id)))
    first = await stream.read()
    assert isinstance(first, gateway_pb2.PlayUpdate)
    assert first.WhichOneof("kind") == "update"  # gRPC: the first update answers the join
    long_id = "x" * 65
    for command_id in (long_id, "ok-1"):
        await requests.put(
            gateway_pb2.PlayRequest(
                command=gateway_pb2.PlayCommand(
                    command_id=command_id,
                    expected_seq=1,  # stale on purpose: refused, nothing changes
                    command=table_pb2.Command(roll=table_pb2.Empty()),
                )
            )
        )
    answers: list[gateway_pb2.PlayUpdate] = []
    while len(answers) < 2:
        message = await asyncio.wait_for(stream.read(), 30)
        assert isinstance(message, gateway_pb2.PlayUpdate)
        if message.WhichOneof("kind") in ("result", "error"):
            answers.append(message)
    too_long, stale = answers[0].error, answers[1].error
    assert (too_long.request_no, too_long.command_id) == (1, "")  # never cut to 64 characters
    assert (too_long.error.code, too_long.error.field) == ("TOO_LONG", "command.command_id")
    assert too_long.status == "INVALID_ARGUMENT"
    assert (stale.request_no, stale.command_id, stale.error.code) == (2, "ok-1", "STALE_SEQ")
    await requests.put(None)


async def test_an_oversized_command_id_is_answered_with_its_request_id_over_websocket(
    ws: Any,
) -> None:
    client = await (await ws()).login()
    table = await client.ok("CreateTable", {"options": {"profile": "casual", "level": "easy"}})
    joined = await client.ok("Play", {"join": {"tableId": table["tableId"]}})
    assert joined == {"tableId": table["tableId"], "seq": joined["seq"], "spectator": False}
    reply = await client.call(
        "Play",
        {"command": {"commandId": "x" * 70, "command": {"roll": {}}}},
        tableId=table["tableId"],
    )
    error = reply["error"]
    assert (error["code"], error["field"], error["commandId"]) == (
        "TOO_LONG", "command.command_id", ""
    )  # fmt: skip
    assert error["requestNo"] == "1" and error["status"] == "INVALID_ARGUMENT"
    client.every_request_answered_once()


# -- items 5 and 6: "WebSocket": one envelope, and "The JSON mapping" ---------------------------


async def test_every_websocket_request_gets_one_answer_with_its_id(ws: Any) -> None:
    client = await ws()
    # Not JSON: the only answer whose id is null (none could be read).
    await client.connection.send("{not json")
    assert await client.answer(None) == {
        "id": None,
        "error": {
            "status": "INVALID_ARGUMENT", "code": "MALFORMED", "message": "not a JSON object",
            "field": "", "metadata": {}, "rejection": "REJECTION_CODE_UNSPECIFIED",
        },
    }  # fmt: skip
    await client.raw({"id": "no-method", "request": {}})
    no_method = await client.answer("no-method")
    assert (no_method["error"]["code"], no_method["error"]["field"]) == ("MALFORMED", "method")
    unknown = await client.call("Frobnicate", {})
    assert (unknown["error"]["code"], unknown["error"]["status"]) == (
        "UNKNOWN_METHOD", "UNIMPLEMENTED"
    )  # fmt: skip
    await client.login()
    tables = [
        (await client.ok("CreateTable", {"options": {"profile": "casual", "level": "easy"}}))[
            "tableId"
        ]
        for _ in range(2)
    ]
    for table_id in tables:  # each join's answer says joined, at which seq; its update follows
        joined = await client.ok("Play", {"join": {"tableId": table_id, "fromSeq": "0"}})
        assert joined["tableId"] == table_id and joined["spectator"] is False
        update = await client.update_at_least(table_id, int(joined["seq"]))
        assert update["seq"] == joined["seq"] and update["view"]["seq"] == joined["seq"]
    roll = {"command": {"commandId": "r1", "command": {"roll": {}}}}
    unnamed = await client.call("Play", roll)
    assert (unnamed["error"]["code"], unnamed["error"]["field"]) == ("NAME_THE_TABLE", "tableId")
    not_joined = await client.call("Play", roll, tableId="t" + secrets.token_hex(8))
    assert not_joined["error"]["code"] == "NOT_JOINED"
    twice = await client.call("Play", {"join": {"tableId": tables[0]}})
    assert (twice["error"]["code"], twice["error"]["status"]) == (
        "ALREADY_JOINED",
        "ALREADY_EXISTS",
    )
    result = await client.call(
        "Play", {"command": {"commandId": "c1", "command": {"roll": {}}}}, tableId=tables[0]
    )
    answer = result.get("response") or result["error"]  # a result or a refusal, with its id
    assert answer["commandId"] == "c1" and answer["requestNo"] == "1"
    client.every_request_answered_once()


async def test_a_public_table_watched_over_websocket_refuses_commands_with_their_id(
    gw: grpc.aio.Channel, ws: Any
) -> None:
    host, guest = [await GrpcPlayer(gw).login() for _ in range(2)]
    made = await host.stub.CreateTable(
        matchmaking_pb2.CreateTableRequest(
            options=table_pb2.TableOptions(profile="casual"), public=True
        ),
        metadata=host.auth,
    )
    await guest.stub.JoinByCode(
        matchmaking_pb2.JoinByCodeRequest(code=made.code), metadata=guest.auth
    )
    await host.stub.StartTable(
        matchmaking_pb2.TableRequest(table_id=made.table_id), metadata=host.auth
    )
    spectator = await (await ws()).login()
    joined = await spectator.ok("Watch", {"tableId": made.table_id, "fromSeq": "0"})
    assert joined["spectator"] is True
    update = await spectator.update_at_least(made.table_id, int(joined["seq"]))
    assert update["view"]["spectator"] is True
    refused = await spectator.call(
        "Play", {"command": {"commandId": "s1", "command": {"roll": {}}}}, tableId=made.table_id
    )
    assert (refused["error"]["code"], refused["error"]["status"]) == (
        "WATCHING_ONLY", "PERMISSION_DENIED"
    )  # fmt: skip
    again = await spectator.call("Watch", {"tableId": made.table_id})
    assert again["error"]["code"] == "ALREADY_WATCHING"
    spectator.every_request_answered_once()


async def test_json_has_every_field_64_bit_strings_and_full_enum_names(ws: Any) -> None:
    client = await (await ws()).login()
    assert await client.ok("GetBalance", {}) == {"balance": "0"}  # a zero balance is there
    table = await client.ok("CreateTable", {"options": {"profile": "casual", "level": "easy"}})
    assert table["public"] is False and table["closeReason"] == ""  # defaults printed
    assert isinstance(table["codeExpiresMs"], str) and int(table["codeExpiresMs"]) > 0
    joined = await client.ok("Play", {"join": {"tableId": table["tableId"]}})
    update = await client.update_at_least(table["tableId"], int(joined["seq"]))
    view = update["view"]
    assert view["seat"] == 0 and isinstance(view["seat"], int)  # seat 0: present, a number
    assert isinstance(view["seq"], str) and view["phase"].startswith("PHASE_")
    assert view["deadlineKind"].startswith("DEADLINE_KIND_")
    assert isinstance(view["dice"], list) and isinstance(view["lit"], list)
    assert all(isinstance(e["seq"], str) and isinstance(e["atMs"], str) for e in update["events"])
    parsed = json_format.ParseDict(view, table_pb2.TableView())  # the mapping, read back
    assert parsed.seq == int(view["seq"])
    # Requests may send 64-bit integers as numbers and enums by name: the mapping's input.
    again = await client.call("Play", {"join": {"tableId": table["tableId"], "fromSeq": 0}})
    assert again["error"]["code"] == "ALREADY_JOINED"
    client.every_request_answered_once()


async def test_a_stream_the_server_ends_says_so_with_a_push(
    cluster: dict[str, Any], ops: grpc.aio.Channel, gw: grpc.aio.Channel, ws: Any
) -> None:
    """A ban ends the player's Play streams: the WebSocket pushes `ended` with the error, and
    the table counts as not joined after it."""
    client = await (await ws()).login()
    table = await client.ok("CreateTable", {"options": {"profile": "casual", "level": "easy"}})
    await client.ok("Play", {"join": {"tableId": table["tableId"]}})
    admin = admin_pb2_grpc.AdminServiceStub(ops)
    operator = cluster["admin"]
    login = await admin.OperatorLogin(
        admin_pb2.OperatorLoginRequest(name=operator["name"], key=operator["key"])
    )
    await admin.Ban(
        admin_pb2.BanRequest(player_id=client.player_id, reason="contract test"),
        metadata=[("authorization", f"Bearer {login.token}")],
    )
    while (message := await client.push())["push"] != "ended":
        assert message["push"] == "update"
    assert message["tableId"] == table["tableId"]
    assert (message["error"]["code"], message["error"]["status"]) == (
        "BANNED", "PERMISSION_DENIED"
    )  # fmt: skip
    after = await client.call(
        "Play", {"command": {"commandId": "late", "command": {"roll": {}}}},
        tableId=table["tableId"],
    )  # fmt: skip
    assert after["error"]["code"] in ("NOT_JOINED", "STREAM_ENDED", "BANNED")
    client.every_request_answered_once()


# -- item 8: "Acting on the view": the other seat's command is NOT_YOUR_TURN --------------------


async def test_the_other_seats_command_during_a_move_is_not_your_turn(
    gw: grpc.aio.Channel, ws: Any
) -> None:
    host = await (await ws()).login()
    guest = await (await ws()).login()
    table = await host.ok("CreateTable", {"options": {"profile": "casual"}})
    await guest.ok("JoinByCode", {"code": table["code"]})
    await host.ok("StartTable", {"tableId": table["tableId"]})
    joined = await host.ok("Play", {"join": {"tableId": table["tableId"]}})
    await guest.ok("Play", {"join": {"tableId": table["tableId"]}})
    view = (await host.update_at_least(table["tableId"], int(joined["seq"])))["view"]
    assert view["phase"] == "PHASE_MOVING"  # the opening roll is played as the first move
    waiting = guest if view["decider"] == 0 else host
    commands: list[dict[str, Any]] = [{"roll": {}}, {"confirm": {}}, {"undo": {}}]
    for command in commands:
        refused = await waiting.call(
            "Play", {"command": {"commandId": secrets.token_hex(4), "command": command}}
        )
        error = refused["error"]
        assert (error["code"], error["rejection"], error["status"]) == (
            "NOT_YOUR_TURN", "REJECTION_CODE_NOT_YOUR_TURN", "FAILED_PRECONDITION"
        )  # fmt: skip
    mover = host if waiting is guest else guest
    wrong = await mover.call("Play", {"command": {"commandId": "m-roll", "command": {"roll": {}}}})
    assert wrong["error"]["code"] == "WRONG_PHASE"  # the mover rolling while moving
    host.every_request_answered_once()
    guest.every_request_answered_once()


async def test_a_ninth_stream_on_one_connection_is_too_many(ws: Any) -> None:
    client = await (await ws()).login()
    tables = [
        (await client.ok("CreateTable", {"options": {"profile": "casual", "level": "easy"}}))[
            "tableId"
        ]
        for _ in range(9)
    ]
    for table_id in tables[:8]:
        await client.ok("Play", {"join": {"tableId": table_id}})
    ninth = await client.call("Play", {"join": {"tableId": tables[8]}})
    assert (ninth["error"]["code"], ninth["error"]["status"]) == (
        "TOO_MANY_STREAMS", "RESOURCE_EXHAUSTED"
    )  # fmt: skip
    client.every_request_answered_once()


# -- item 9: "The lobby": a retried call never seats or stakes twice; W-1 ----------------------


async def test_a_retried_quick_match_answers_the_first_table_over_grpc(
    cluster: dict[str, Any], gw: grpc.aio.Channel
) -> None:
    """The issue's repro: A waits; B deals A against B; A's retry (first answer lost) gets that
    dealt table; C then waits alone. A is staked once: balances to the diamond."""
    ann, bob, cat = [await GrpcPlayer(gw).login() for _ in range(3)]
    for p in (ann, bob, cat):
        await fund(cluster, p.player_id, 1_000)
    # A bet of its own, so no other test's quick match pairs with these players.
    bet = table_pb2.TableOptions(
        profile="wagered", match_length=1, bet=300 + 100 * secrets.randbelow(8)
    )
    first = await ann.stub.QuickMatch(
        matchmaking_pb2.QuickMatchRequest(options=bet, request_id="qm-1"), metadata=ann.auth
    )
    assert first.status == "open"
    dealt = await bob.stub.QuickMatch(
        matchmaking_pb2.QuickMatchRequest(options=bet, request_id="qm-1"), metadata=bob.auth
    )
    assert dealt.table_id == first.table_id and dealt.status == "dealt"
    retry = await ann.stub.QuickMatch(
        matchmaking_pb2.QuickMatchRequest(options=bet, request_id="qm-1"), metadata=ann.auth
    )
    assert retry.table_id == first.table_id and retry.status == "dealt"
    alone = await cat.stub.QuickMatch(
        matchmaking_pb2.QuickMatchRequest(options=bet), metadata=cat.auth
    )
    assert alone.status == "open" and ann.player_id not in alone.player_ids
    with pytest.raises(grpc.aio.AioRpcError) as held:  # no request id: W-1 refuses it
        await ann.stub.QuickMatch(matchmaking_pb2.QuickMatchRequest(options=bet), metadata=ann.auth)
    error = refusal(held.value)
    assert error.code == "IN_ANOTHER_MATCH" and error.metadata["table_id"] == first.table_id
    with pytest.raises(grpc.aio.AioRpcError) as reused:
        await ann.stub.QuickMatch(
            matchmaking_pb2.QuickMatchRequest(options=BET200, request_id="qm-1"),
            metadata=ann.auth,
        )
    assert (refusal(reused.value).code, refusal(reused.value).field) == (
        "REQUEST_ID_REUSED", "request_id"
    )  # fmt: skip
    for p, expected in ((ann, 1_000 - bet.bet), (bob, 1_000 - bet.bet), (cat, 1_000)):
        balance = await p.stub.GetBalance(gateway_pb2.BalanceRequest(), metadata=p.auth)
        assert balance.balance == expected
    await cat.stub.LeaveTable(
        matchmaking_pb2.TableRequest(table_id=alone.table_id), metadata=cat.auth
    )


async def test_a_retried_create_and_join_answer_the_first_table_over_websocket(
    cluster: dict[str, Any], ws: Any
) -> None:
    host = await (await ws()).login()
    guest = await (await ws()).login()
    for p in (host, guest):
        await fund(cluster, p.player_id, 1_000)
    options = {"options": {"profile": "wagered", "matchLength": 1, "bet": "300"}}
    made = await host.ok("CreateTable", options | {"requestId": "ct-1"})
    assert await host.ok("CreateTable", options | {"requestId": "ct-1"}) == made
    join = {"code": made["code"], "requestId": "jb-1"}
    dealt = await guest.ok("JoinByCode", join)
    assert dealt["status"] == "dealt"
    assert (await guest.ok("JoinByCode", join))["matchId"] == dealt["matchId"]
    second = await host.call("CreateTable", options)
    assert second["error"]["code"] == "IN_ANOTHER_MATCH"
    assert second["error"]["metadata"]["table_id"] == made["tableId"]
    for p in (host, guest):
        assert await p.ok("GetBalance", {}) == {"balance": "700"}
    host.every_request_answered_once()
    guest.every_request_answered_once()


# -- item 7: "Rate limits": a documented bucket a client can stay under -------------------------


@pytest.fixture
async def default_gateway(cluster: dict[str, Any], tmp_path: Any) -> AsyncIterator[tuple[str, str]]:
    """A gateway replica on the shared cluster with the documented default limits (the shared
    one is given 500 a second for the other tests): its gRPC address and WebSocket URL."""
    import json
    from pathlib import Path

    from services.common.host import ServiceHost
    from services.gateway.app import build_app

    state = json.loads((Path(cluster["data"]) / "cluster.json").read_text())
    env = {
        "BG_GRPC_PORT": "0", "BG_METRICS_PORT": "0", "BG_WS_PORT": "0",
        "BG_REDIS_URL": state["redis_url"], "BG_TOKEN_SECRET": SECRET,
        "BG_MATCHMAKING_ADDR": cluster["matchmaking"], "BG_WALLET_ADDR": cluster["wallet"],
        "BG_LEADERBOARD_ADDR": cluster["leaderboard"],
        "BG_TABLE_ADDRS": ",".join(v for k, v in cluster.items() if k.startswith("table-")),
        "BG_IDENTITY_ADDR": cluster["identity"],
        "BG_LOG_LEVEL": "WARNING",
    }  # fmt: skip
    host = ServiceHost(build_app(env))
    await host.start()
    try:
        yield f"127.0.0.1:{host.grpc_port}", f"ws://127.0.0.1:{host.app.ports['ws']}/"
    finally:
        await host.stop()


async def test_a_burst_after_idle_passes_then_refusals_say_when_to_retry(
    default_gateway: tuple[str, str],
) -> None:
    """50 calls a second with bursts of 50 (the defaults): a burst of 50 after a pause all pass
    (the fixed windows let 11 through); beyond the bucket a refusal carries retry_after_ms, and
    waiting that long is enough. Two connections of one player share the bucket."""
    address, _ = default_gateway
    opts = [("grpc.use_local_subchannel_pool", 1)]
    async with (
        grpc.aio.insecure_channel(address, options=opts) as one,
        grpc.aio.insecure_channel(address, options=opts) as two,
    ):
        player = await GrpcPlayer(one).login()
        other_connection = GrpcPlayer(two)
        other_connection.token = player.token

        async def names(p: GrpcPlayer) -> str:
            try:
                await p.stub.GetNames(
                    gateway_pb2.NamesRequest(player_ids=[p.player_id or "x"]), metadata=p.auth
                )
                return "OK"
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                error = refusal(exc)
                assert error.code == "RATE_LIMITED"
                assert 1 <= int(error.metadata["retry_after_ms"]) <= 1000
                return error.metadata["retry_after_ms"]

        started = time.monotonic()
        burst = await asyncio.gather(*(names(player) for _ in range(50)))
        assert burst == ["OK"] * 50
        more = await asyncio.gather(
            *(names(p) for _ in range(50) for p in (player, other_connection))
        )
        passed = more.count("OK")
        assert passed < 100  # one bucket for both connections: it ran dry
        # No more than the bucket and its refill since the burst began (50 a second).
        assert 50 + passed <= 50 + 50 * (time.monotonic() - started) + 2
        wait_ms = max(int(m) for m in more if m != "OK")
        await asyncio.sleep(wait_ms / 1000 + 0.05)
        assert await names(player) == "OK"


async def test_play_commands_draw_from_the_players_bucket_over_websocket(
    default_gateway: tuple[str, str],
) -> None:
    from websockets.asyncio.client import connect

    _, url = default_gateway
    async with connect(url) as connection:
        client = WsClient(connection)
        try:
            await client.login()
            table = await client.ok(
                "CreateTable", {"options": {"profile": "casual", "level": "easy"}}
            )
            await client.ok("Play", {"join": {"tableId": table["tableId"]}})
            limited = None
            for attempt in range(20):  # calls empty the bucket; the command right after them
                ids = [await client.send("GetNames", {"playerIds": ["x"]}) for _ in range(60)]
                command_id = f"c{attempt}"
                sent = await client.send(
                    "Play", {"command": {"commandId": command_id, "command": {"roll": {}}}}
                )
                answers = [await client.answer(i) for i in ids]
                assert any("error" in a for a in answers)  # the calls emptied it
                error = (await client.answer(sent)).get("error", {})
                if error.get("code") == "RATE_LIMITED":
                    limited = error
                    break
            assert limited is not None, "a command never met the calls' bucket"
            assert (limited["status"], limited["commandId"]) == ("RESOURCE_EXHAUSTED", command_id)
            assert int(limited["metadata"]["retry_after_ms"]) >= 1
            client.every_request_answered_once()
        finally:
            await client.close()


async def test_quick_matches_whose_answers_are_lost_stake_once(
    cluster: dict[str, Any], gw: grpc.aio.Channel
) -> None:
    """Item 9 under a real lost answer: 24 players' QuickMatch each given a 20 ms deadline (the
    call goes on in the cluster, the answer is lost) and then retried with the same request id
    until answered. Afterwards every player sits at one table, all dealt in pairs, and each
    balance is short by one stake, no more: to the diamond."""
    from bg.matchmaking.v1 import matchmaking_pb2_grpc

    players = [await GrpcPlayer(gw).login() for _ in range(24)]
    for p in players:
        await fund(cluster, p.player_id, 2_000)
    bet = table_pb2.TableOptions(
        profile="wagered", match_length=1, bet=1_100 + 100 * secrets.randbelow(9)
    )
    lost = 0

    async def seat(p: GrpcPlayer) -> matchmaking_pb2.LobbyTable:
        nonlocal lost
        request = matchmaking_pb2.QuickMatchRequest(options=bet, request_id=secrets.token_hex(8))
        timeout = 0.02
        for _ in range(100):
            try:
                return await p.stub.QuickMatch(request, metadata=p.auth, timeout=timeout)
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in (
                    grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED,
                    grpc.StatusCode.UNAVAILABLE,
                ):  # fmt: skip
                    raise
                lost += 1
                timeout = 10.0
        raise AssertionError("never answered")

    await asyncio.gather(*(seat(p) for p in players))
    assert lost >= len(players) // 2  # most first answers were lost, as meant
    lobby = matchmaking_pb2_grpc.MatchmakingServiceStub(
        grpc.aio.insecure_channel(cluster["matchmaking"])
    )
    deadline = time.monotonic() + 30
    tables: dict[str, list[str]] = {}
    seated: dict[str, list[tuple[str, str]]] = {}
    while True:  # the last pair's deal (and a table left for a pairing) may still be finishing
        tables, seated = {}, {}
        for p in players:
            mine = await lobby.PlayerTables(
                matchmaking_pb2.PlayerTablesRequest(player_id=p.player_id)
            )
            live = [t for t in mine.tables if t.status in ("open", "dealing", "dealt")]
            seated[p.player_id] = [(t.table_id, t.status) for t in live]
            for t in live:
                tables.setdefault(t.table_id, []).append(t.status)
        settled = all(len(v) == 1 for v in seated.values())
        if settled and all(s == ["dealt", "dealt"] for s in tables.values()):
            break
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.3)
    assert all(len(v) == 1 for v in seated.values()), seated  # one table each, no more
    assert len(tables) == len(players) // 2
    assert all(s == ["dealt", "dealt"] for s in tables.values()), tables
    for p in players:
        balance = await p.stub.GetBalance(gateway_pb2.BalanceRequest(), metadata=p.auth)
        assert balance.balance == 2_000 - bet.bet, p.player_id


# -- issue 41: every documented bound is the gateway's, and an empty id is MISSING everywhere ---


async def _code_of(call: Any) -> str:
    """The code a call is refused with, "" when it is answered."""
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return str(refusal(exc).code)
    return ""


async def test_every_documented_bound_is_the_gateways_at_its_edges(
    cluster: dict[str, Any], ops: grpc.aio.Channel, gw: grpc.aio.Channel
) -> None:
    """docs/protocol.md's Bounds table is made from services/contracts/bounds.py; here each
    bound's edges go to the real gateway: the value just outside gets the documented code, the
    value at the bound gets past it (answered, or refused for something else). A bound with no
    probe here fails the test, so the list and this check cannot drift apart."""
    from bg.gateway.v1 import gateway_pb2_grpc
    from services.contracts.bounds import BOUNDS

    stub = gateway_pb2_grpc.GatewayServiceStub(gw)
    guest = await GrpcPlayer(gw).login()
    account = await stub.Login(
        gateway_pb2.LoginRequest(device_id=device_id(), display_name="Bounded")
    )
    mine = [("authorization", f"Bearer {account.token}")]
    admin = admin_pb2_grpc.AdminServiceStub(ops)
    operator = await admin.OperatorLogin(
        admin_pb2.OperatorLoginRequest(name=cluster["admin"]["name"], key=cluster["admin"]["key"])
    )
    op_auth = [("authorization", f"Bearer {operator.token}")]

    def name_login(n: int) -> Any:
        return stub.Login(gateway_pb2.LoginRequest(device_id=device_id(), display_name="N" * n))

    def guest_login(n: int) -> Any:
        return stub.Login(gateway_pb2.LoginRequest(guest_name="g" * n))

    def report(n: int) -> Any:
        ask = gateway_pb2.ReportChatRequest(table_id="t-none", message_id="m", reason="r" * n)
        return stub.ReportChat(ask, metadata=guest.auth)

    def hint(n: int) -> Any:
        ask = gateway_pb2.HintRequest(table_id="t-none", limit=n)
        return stub.GetHint(ask, metadata=guest.auth)

    async def tournament(n: int) -> Any:
        ask = matchmaking_pb2.CreateTournamentRequest(
            name="T" * n, kind="sit_and_go", size=4,
            options=table_pb2.TableOptions(profile="casual"), request_id=secrets.token_hex(4),
        )  # fmt: skip
        made = await admin.CreateTournament(ask, metadata=op_auth)
        cancel = matchmaking_pb2.CancelTournamentRequest(
            tournament_id=made.tournament_id, reason="a bound's probe"
        )
        await admin.CancelTournament(cancel, metadata=op_auth)  # no other test meets it

    def code(n: int) -> Any:
        ask = matchmaking_pb2.JoinByCodeRequest(code="C" * n)
        return stub.JoinByCode(ask, metadata=guest.auth)

    def email(n: int) -> Any:
        local = "e" * max(1, min(64, n - 5))  # the longest a well-formed address can be
        address = f"{local}@{'d' * (n - len(local) - 4)}.cd" if n >= 6 else "a@b"
        ask = gateway_pb2.LinkEmailRequest(email=address, password="p" * 12)
        return stub.LinkEmail(ask, metadata=mine)

    def password(n: int) -> Any:
        address = f"{secrets.token_hex(4)}@example.org"
        ask = gateway_pb2.LinkEmailRequest(email=address, password="p" * n)
        return stub.LinkEmail(ask, metadata=mine)

    def device(n: int) -> Any:
        return stub.Login(gateway_pb2.LoginRequest(device_id="d" * n, display_name="Devicer"))

    def text(n: int) -> Any:
        ask = gateway_pb2.SendChatRequest(
            table_id="t-none", channel=gateway_pb2.CHAT_CHANNEL_TABLE, text="x" * n
        )
        return stub.SendChat(ask, metadata=mine)

    def an_id(n: int) -> Any:
        return stub.GetView(gateway_pb2.ViewRequest(table_id="t" * n), metadata=guest.auth)

    probes = {
        "display_name": name_login, "guest_name": guest_login, "reason": report, "limit": hint,
        "name": tournament, "code": code, "email": email, "password": password,
        "device_id": device, "text": text,
        "table_id, player_id, match_id, request_id, command_id, ...": an_id,
    }  # fmt: skip
    assert sorted(probes) == sorted(b.field for b in BOUNDS)
    for bound in BOUNDS:
        probe = probes[bound.field]
        outside = [(bound.high + 1, bound.over)]
        if bound.low > 0 or bound.field == "limit":
            outside.append((bound.low - 1, bound.under))
        for n, expected in outside:
            assert await _code_of(probe(n)) == expected, (bound.field, n)
        for n in {bound.low, bound.high} - {0}:
            got = await _code_of(probe(n))
            assert got not in (bound.under, bound.over), (bound.field, n, got)


async def test_an_empty_id_is_missing_naming_its_field_on_every_call(
    cluster: dict[str, Any], gw: grpc.aio.Channel
) -> None:
    """Issue 41, item 11: every call that names something, sent with it empty, is
    INVALID_ARGUMENT / MISSING with `field` naming it (it was MALFORMED, UNKNOWN_MESSAGE,
    UNKNOWN_TOURNAMENT, UNKNOWN_TABLE or INVALID_ID depending on the call), over gRPC; the
    list of what each request must name is the one the docs are made from."""
    from bg.gateway.v1 import gateway_pb2_grpc
    from services.gateway.edge_bounds import REQUIRED

    stub = gateway_pb2_grpc.GatewayServiceStub(gw)
    player = await GrpcPlayer(gw).login()
    service = gateway_pb2.DESCRIPTOR.services_by_name["GatewayService"]
    checked = set()
    for method in service.methods:
        fields = REQUIRED.get(method.input_type.full_name)
        if not fields or method.client_streaming:
            continue
        empty = _message_class(method.input_type)
        call = getattr(stub, method.name)(empty, metadata=player.auth)
        try:
            if method.server_streaming:
                async for _ in call:
                    pass
            else:
                await call
        except grpc.aio.AioRpcError as exc:
            error = refusal(exc)
            assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, method.name
            assert (error.code, error.field) == ("MISSING", fields[0]), method.name
            checked.add(method.input_type.full_name)
            continue
        raise AssertionError(f"{method.name} answered an empty request")
    assert checked == set(REQUIRED)  # every request that must name something was sent


def _message_class(descriptor: Any) -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(descriptor)()
