"""End to end through the gateway of a running cluster (two table replicas, real Valkey, Tansu,
SQLite), clocks scaled by 0.05: each profile's full match, disconnects, leaving, doubles,
a player who cannot cover, bad tokens and other players' tables."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.analysis.v1 import analysis_pb2
from bg.common.v1 import errors_pb2
from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.play_wire import next_command, phase_of, reason_of
from client.player import Player
from engine import bots
from engine.position import Position
from services.common.errors import error_from
from services.common.tokens import Identity, TokenSigner
from services.contracts.vocabulary import FINISHED
from tests.cluster.conftest import BOTS_SECRET, SECRET
from tests.helpers import error_of

pytestmark = pytest.mark.e2e
_EOF: Any = grpc.aio.EOF  # type: ignore[attr-defined]  # the stubs lack it
BIN = Path(sys.executable).parent


async def _players(
    cluster: dict[str, Any], channel: grpc.aio.Channel, *names: str, grant: int = 5000
) -> list[Player]:
    players = [Player(channel, n, seed=i) for i, n in enumerate(names)]
    async with grpc.aio.insecure_channel(cluster["wallet"]) as wc:
        wallet = wallet_pb2_grpc.WalletServiceStub(wc)
        for p in players:
            await p.login()
            if grant:
                await wallet.Deposit(
                    wallet_pb2.DepositRequest(
                        idempotency_key=f"g:{p.player_id}", player_id=p.player_id, amount=grant
                    ),
                    metadata=[("x-operator-token", cluster["operator"])],
                )
    return players


async def _balances_settle(players: Sequence[Player], expected: dict[str, int]) -> dict[str, int]:
    got: dict[str, int] = {}
    for _ in range(300):
        got = {p.player_id: await p.balance() for p in players}
        if got == expected:
            break
        await asyncio.sleep(0.1)
    return got


@pytest.mark.parametrize(
    "options",
    [
        table_pb2.TableOptions(profile="scored", match_length=3),
        table_pb2.TableOptions(profile="casual", match_length=1, cube=True),
    ],
    ids=["scored", "casual"],
)
async def test_full_match_of_each_profile(
    cluster: dict[str, Any], options: table_pb2.TableOptions
) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob", grant=0)
        table = await ann.create_table(options)
        joined = await bob.join(table.code)
        if options.profile == "casual":
            assert joined.status == "open"
            await ann.stub.StartTable(
                matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
            )
        views = await asyncio.gather(ann.play(table.table_id, 240), bob.play(table.table_id, 240))
        assert phase_of(views[0]) == "match_over" and views[0].winner in (0, 1)
        assert not ann.errors or set(ann.errors) <= {"STALE_SEQ", "NOT_YOUR_TURN", "WRONG_PHASE"}


async def test_bad_tokens_and_other_players_tables(cluster: dict[str, Any]) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob, eve = await _players(cluster, ch, "ann", "bob", "eve", grant=0)
        cases = [
            ([], "NO_TOKEN"),
            ([("authorization", "Bearer " + ann.token[:-4] + "xxxx")], "BAD_TOKEN"),
            ([("authorization", "Bearer garbage")], "BAD_TOKEN"),
        ]
        expired, _ = TokenSigner(SECRET, 60).issue(
            Identity(ann.player_id, "ann"), now=time.time() - 3600
        )
        cases.append(([("authorization", f"Bearer {expired}")], "TOKEN_EXPIRED"))
        for metadata, code in cases:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await ann.stub.GetBalance(gateway_pb2.BalanceRequest(), metadata=metadata)
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert error_of(err.value).code == code
        table = await ann.create_table(table_pb2.TableOptions(profile="scored"))
        await bob.join(table.code)
        with pytest.raises(grpc.aio.AioRpcError) as foreign:
            await eve.view(table.table_id)
        assert error_of(foreign.value).code == "NOT_SEATED"
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await eve.view("no-such-table")
        assert error_of(unknown.value).code == "UNKNOWN_TABLE"
        # eve's Play stream on ann's table is refused, and changes nothing.
        before = await ann.view(table.table_id)

        async def join_only() -> Any:
            yield gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table.table_id))

        call = eve.stub.Play(join_only(), metadata=eve.auth)
        with pytest.raises(grpc.aio.AioRpcError) as play_err:
            async for _ in call:
                pass
        assert play_err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert (await ann.view(table.table_id)).seq == before.seq


async def test_player_who_cannot_cover_the_bet(cluster: dict[str, Any]) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        (ann,) = await _players(cluster, ch, "ann")
        (poor,) = await _players(cluster, ch, "poor", grant=100)
        table = await ann.create_table(
            table_pb2.TableOptions(profile="wagered", match_length=1, bet=500)
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await poor.join(table.code)
        assert (error_from(refused.value) or errors_pb2.Error()).code == "INSUFFICIENT_FUNDS"
        with pytest.raises(grpc.aio.AioRpcError) as own:
            await poor.create_table(table_pb2.TableOptions(profile="wagered", bet=500))
        assert (error_from(own.value) or errors_pb2.Error()).code == "INSUFFICIENT_FUNDS"
        assert (await ann.table(table.table_id)).status == "open"  # still waiting for someone
        assert (await ann.balance(), await poor.balance()) == (5000, 100)  # nothing taken


async def test_leaving_a_wagered_match_pays_the_opponent(cluster: dict[str, Any]) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob")
        table = await ann.create_table(
            table_pb2.TableOptions(profile="wagered", match_length=3, bet=1000)
        )
        await bob.join(table.code)
        await bob.stub.LeaveTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=bob.auth
        )
        view = await ann.view(table.table_id)
        assert (phase_of(view), reason_of(view), view.winner) == ("match_over", "left", 0)
        got = await _balances_settle([ann, bob], {ann.player_id: 5840, bob.player_id: 4000})
        assert got == {ann.player_id: 5840, bob.player_id: 4000}  # I-6, I-11


@pytest.mark.parametrize(
    ("profile", "phase", "reason"),
    [("scored", "match_over", "left"), ("casual", "closed", "abandoned")],
)
async def test_leaving_scored_and_casual(
    cluster: dict[str, Any], profile: str, phase: str, reason: str
) -> None:
    """I-18: leaving a scored first game is a loss; a casual party is abandoned."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob", grant=0)
        table = await ann.create_table(table_pb2.TableOptions(profile=profile))
        await bob.join(table.code)
        if profile == "casual":
            await ann.stub.StartTable(
                matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
            )
        await bob.stub.LeaveTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=bob.auth
        )
        view = await ann.view(table.table_id)
        assert (phase_of(view), reason_of(view)) == (phase, reason)


async def _open_stream(
    player: Player, table_id: str, from_seq: int = 0
) -> tuple[Any, asyncio.Queue[Any]]:
    requests: asyncio.Queue[Any] = asyncio.Queue()
    await requests.put(
        gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table_id, from_seq=from_seq))
    )

    async def outgoing() -> Any:
        while (item := await requests.get()) is not None:
            yield item

    return player.stub.Play(outgoing(), metadata=player.auth), requests


async def _until(pred: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if await pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{pred.__name__} not reached in {timeout_s}s")


@pytest.mark.parametrize(
    ("options", "ends"),
    [
        (table_pb2.TableOptions(profile="wagered", match_length=3, bet=100), True),  # 60 s (I-9)
        (table_pb2.TableOptions(profile="scored", match_length=3, test_game=True), True),  # 3 min
        (table_pb2.TableOptions(profile="casual", match_length=3, async_mode=True), False),  # I-25
    ],
    ids=["wagered", "scored", "casual-async"],
)
async def test_disconnect_and_resume_within_the_window_then_past_it(
    cluster: dict[str, Any], options: table_pb2.TableOptions, ends: bool
) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob")
        table = await ann.create_table(options)
        await bob.join(table.code)
        if options.profile == "casual":
            await ann.stub.StartTable(
                matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
            )
        # ann stays at the table throughout (a player with no stream is away: I-41).
        ann_call, ann_requests = await _open_stream(ann, table.table_id)
        await ann_call.read()
        call, requests = await _open_stream(bob, table.table_id)
        first = await call.read()
        assert first.update.events[0].seq == 1 and first.update.view.seat == 1
        call.cancel()  # bob's only stream drops: the gateway reports the disconnect

        async def away() -> bool:
            return list((await ann.view(table.table_id)).away) == [False, True]

        await _until(away)
        seen = (await ann.view(table.table_id)).seq
        call2, requests2 = await _open_stream(bob, table.table_id, from_seq=seen - 1)
        resumed = await call2.read()
        assert resumed.update.events[0].seq == seen  # resumes after the seq the client names

        async def back() -> bool:
            return list((await ann.view(table.table_id)).away) == [False, False]

        await _until(back)
        call2.cancel()  # gone again, and this time for good (wagered 60 s, scored 3 min; x 0.05)
        if not ends:  # casual turn-based: no limit while away (only 45 idle days)
            await _until(away)
            await asyncio.sleep(12)
            assert phase_of(await ann.view(table.table_id)) not in ("match_over", "closed")
            for queue in (requests, requests2, ann_requests):
                await queue.put(None)
            return

        async def over() -> bool:
            return phase_of(await ann.view(table.table_id)) == "match_over"

        try:
            await _until(over, 30)
        except AssertionError:
            v = await ann.view(table.table_id)
            raise AssertionError(
                f"phase={v.phase} away={list(v.away)} deadline={v.deadline_kind} "
                f"reason={v.end_reason}"
            ) from None
        view = await ann.view(table.table_id)
        assert (reason_of(view), view.winner) == ("away", 0)
        if options.profile == "wagered":
            settled = await _balances_settle([ann, bob], {ann.player_id: 5084, bob.player_id: 4900})
            assert settled == {ann.player_id: 5084, bob.player_id: 4900}
        for queue in (requests, requests2, ann_requests):
            await queue.put(None)


class Doubler(Player):
    """Offers a double whenever allowed; the first double of the match is taken, the next
    dropped (the count is shared by both players)."""

    def __init__(self, *args: Any, answers: list[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answers = answers

    def decide(self, v: Any) -> table_pb2.Command | None:
        if v.decider == v.seat and phase_of(v) == "await_roll" and v.can_double:
            return table_pb2.Command(offer_double=table_pb2.Empty())
        if v.decider == v.seat and phase_of(v) == "double_offered":
            if v.seq not in self.answers:  # a retried decision on the same view counts once
                self.answers.append(v.seq)
            if self.answers[0] == v.seq:
                return table_pb2.Command(take=table_pb2.Empty())
            return table_pb2.Command(drop=table_pb2.Empty())
        return super().decide(v)


async def test_wagered_double_taken_then_redouble_dropped(cluster: dict[str, Any]) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        answers: list[int] = []
        players = [
            Doubler(ch, "ann", seed=1, answers=answers),
            Doubler(ch, "bob", seed=2, answers=answers),
        ]
        async with grpc.aio.insecure_channel(cluster["wallet"]) as wc:
            wallet = wallet_pb2_grpc.WalletServiceStub(wc)
            for p in players:
                await p.login()
                await wallet.Deposit(
                    wallet_pb2.DepositRequest(
                        idempotency_key=f"g:{p.player_id}", player_id=p.player_id, amount=5000
                    ),
                    metadata=[("x-operator-token", cluster["operator"])],
                )
        ann, bob = players
        table = await ann.create_table(
            table_pb2.TableOptions(profile="wagered", match_length=1, bet=500)
        )
        await bob.join(table.code)
        views = await asyncio.gather(ann.play(table.table_id, 120), bob.play(table.table_id, 120))
        final = views[0]
        assert (
            phase_of(final) == "match_over" and final.cube == 2
        )  # taken once, the redouble dropped
        winner, loser = (ann, bob) if final.winner == final.seat else (bob, ann)
        # Final stakes 1,000 each: pot 2,000, fees 80 + 80, winner +840 net (I-4, I-11).
        got = await _balances_settle(players, {winner.player_id: 5840, loser.player_id: 4000})
        assert got == {winner.player_id: 5840, loser.player_id: 4000}


@pytest.mark.parametrize(
    "options",
    [
        table_pb2.TableOptions(profile="casual", level="normal"),
        table_pb2.TableOptions(profile="scored", level="easy"),
        table_pb2.TableOptions(profile="casual", level="expert", cube=True),
    ],
    ids=["casual-vs-cpu-normal", "scored-vs-computer-easy", "casual-vs-expert-with-cube"],
)
async def test_playing_against_the_computer(
    cluster: dict[str, Any], options: table_pb2.TableOptions
) -> None:
    """I-26/I-31: the bots worker plays the computer seat through the gateway."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        (ann,) = await _players(cluster, ch, "ann", grant=0)
        table = await ann.create_table(options)
        assert table.status == "dealt" and table.player_ids[1].startswith(f"cpu-{options.level}-")
        final = await ann.play(table.table_id, 240)
        assert phase_of(final) == "match_over"


class WsPlayer(Player):
    """The scripted player over the WebSocket API (protobuf JSON mapping)."""

    def __init__(self, ws: Any, name: str, seed: int) -> None:
        super().__init__(grpc.aio.insecure_channel("127.0.0.1:1"), name, seed=seed)
        self.ws = ws
        self.next_id = 0
        self.updates: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.friends: asyncio.Queue[dict[str, Any]] = asyncio.Queue()  # the Friends stream's
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            if message.get("push") == "update":
                await self.updates.put(message["update"])
            elif message.get("push") == "friends":
                await self.friends.put(message["friends"])
            elif message.get("id") in self.replies:
                self.replies.pop(message["id"]).set_result(message)

    async def answer(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        """The one answer to a request: {"id", "response"} or {"id", "error"}."""
        self.next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.replies[self.next_id] = future
        await self.ws.send(
            json.dumps(
                {"id": self.next_id, "method": method, "request": request, "token": self.token}
            )
        )
        reply: dict[str, Any] = await asyncio.wait_for(future, 30)
        return reply

    async def call(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        reply = await self.answer(method, request)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return dict(reply["response"])

    async def ws_view(self, table_id: str) -> table_pb2.TableView:
        from google.protobuf import json_format

        return json_format.ParseDict(
            await self.call("GetView", {"tableId": table_id}), table_pb2.TableView()
        )

    async def ws_play(self, table_id: str) -> table_pb2.TableView:
        """Play from the views the stream pushes (never GetView)."""
        from google.protobuf import json_format

        joined = await self.call("Play", {"join": {"tableId": table_id}})
        assert joined["tableId"] == table_id and joined["spectator"] is False
        view = table_pb2.TableView()

        async def pump(timeout_s: float) -> None:
            message = await asyncio.wait_for(self.updates.get(), timeout_s)
            assert message["tableId"] == table_id
            pushed = json_format.ParseDict(message["update"]["view"], table_pb2.TableView())
            if pushed.seq >= view.seq:
                view.CopyFrom(pushed)

        while not view.seq:
            await pump(30)
        assert view.seq == int(joined["seq"])  # the join's answer says at which seq
        for _ in range(5000):
            if phase_of(view) in ("match_over", "closed"):
                return view
            cmd = self.decide(view)
            if cmd is None:
                with contextlib.suppress(TimeoutError):
                    await pump(2)
                continue
            command_id = f"c{self.next_id}-{view.seq}"
            body = {
                "commandId": command_id,
                "expectedSeq": str(view.seq),
                "command": json_format.MessageToDict(cmd),
            }
            # No tableId: optional while one table is joined on the connection.
            reply = await self.answer("Play", {"command": body})
            result = reply.get("response")
            if result is None:
                assert reply["error"]["commandId"] == command_id
                if reply["error"]["code"] == "STALE_SEQ":  # the table moved on (the other
                    await pump(30)  # player's arrival, I-41): decide on the newer view
            while result and view.seq < int(result["seq"]):
                await pump(30)
        raise AssertionError("no end")


@pytest.mark.parametrize(
    "options",
    [
        {"profile": "casual"},
        {"profile": "scored", "testGame": True},
        {"profile": "wagered", "matchLength": 1, "bet": 100},
    ],
    ids=["casual", "scored", "wagered"],
)
async def test_websocket_path_for_a_whole_match_from_pushed_views(
    cluster: dict[str, Any], options: dict[str, Any]
) -> None:
    """Each profile played over the WebSocket API, acting only on pushed views."""
    from websockets.asyncio.client import connect

    state = json.loads((Path(cluster["data"]) / "cluster.json").read_text())
    ws_url = next(s["ws"] for s in state["services"] if s["name"] == "gateway")
    async with connect(ws_url) as ws_ann, connect(ws_url) as ws_bob:
        ann, bob = WsPlayer(ws_ann, "ann", 1), WsPlayer(ws_bob, "bob", 2)
        for p in (ann, bob):
            login = await p.call("Login", {"guestName": p.name})
            p.token, p.player_id = login["token"], login["playerId"]
        async with grpc.aio.insecure_channel(cluster["wallet"]) as wc:
            wallet = wallet_pb2_grpc.WalletServiceStub(wc)
            for p in (ann, bob):
                await wallet.Deposit(
                    wallet_pb2.DepositRequest(
                        idempotency_key=f"g:{p.player_id}", player_id=p.player_id, amount=5000
                    ),
                    metadata=[("x-operator-token", cluster["operator"])],
                )
        bad = None
        try:
            await bob.call("GetView", {"tableId": "nope"})
        except RuntimeError as exc:
            bad = exc.args[0]
        assert bad is not None and bad["code"] == "UNKNOWN_TABLE" and bad["status"] == "NOT_FOUND"
        table = await ann.call("CreateTable", {"options": options})
        await bob.call("JoinByCode", {"code": table["code"]})
        if options["profile"] == "casual":
            await ann.call("StartTable", {"tableId": table["tableId"]})
        views = await asyncio.gather(ann.ws_play(table["tableId"]), bob.ws_play(table["tableId"]))
        assert phase_of(views[0]) == "match_over" and views[0].winner in (0, 1)
        assert views[0].seq == views[1].seq  # both saw the table to its last event
        for p in (ann, bob):
            p.reader.cancel()


async def test_terminal_client_against_the_cpu(cluster: dict[str, Any]) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(BIN / "bgcluster"), "play", "--vs-cpu", "normal", "--name", "tty",
        "--gateway", cluster["gateway"], stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    script = b"help\nwhat\nhint\nhistory\nanalysis\nleave\n"
    out, _ = await asyncio.wait_for(proc.communicate(script), 60)
    text = out.decode()
    assert proc.returncode == 0, text
    # The board was drawn with whose turn it is (lit points once it is ours and we move).
    assert "pips: you" in text and ("lit:" in text or "turn" in text)
    assert "not understood" in text and "move FROM TO" in text and "auto on / auto off" in text
    assert "match over: nobody won (abandoned)" in text
    # A hint vs the CPU: the best plays at the start of our move, or why not now.
    assert "% to win" in text or "A hint is for the start of your move" in text, text
    # Issue 28: no finished match yet, and the match in play has no analysis (only the end does).
    assert "no finished match yet" in text and "no analysis of that match" in text, text


async def _command(call: Any, requests: asyncio.Queue[Any], kind: str, seq: int) -> Any:
    cmd = table_pb2.Command()
    getattr(cmd, kind).SetInParent()
    command_id = f"{kind}-{seq}"
    await requests.put(
        gateway_pb2.PlayRequest(command=gateway_pb2.PlayCommand(command_id=command_id, command=cmd))
    )
    while True:
        update = await asyncio.wait_for(call.read(), 20)
        which = update.WhichOneof("kind")
        if which in ("result", "error") and getattr(update, which).command_id == command_id:
            return update


def _acts(view: table_pb2.TableView) -> bool:
    return view.decider == view.seat


async def test_one_message_per_seat_per_commit(cluster: dict[str, Any]) -> None:
    """Issue 25: with `Join.results_in_updates` the answer to a command rides on the update that
    shows it: the acting seat gets one message for the commit (its update carrying the
    result), the other seat one (its update); a refused command then gets its error alone.
    Each stream's messages are read up to a refused command's error, so nothing else can hide
    in between."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob", grant=0)
        table = await ann.create_table(table_pb2.TableOptions(profile="casual", match_length=3))
        await bob.join(table.code)
        await ann.stub.StartTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
        )
        streams: dict[str, tuple[Any, asyncio.Queue[Any], table_pb2.TableView]] = {}
        for p in (ann, bob):
            requests: asyncio.Queue[Any] = asyncio.Queue()
            join = gateway_pb2.Join(table_id=table.table_id, results_in_updates=True)
            await requests.put(gateway_pb2.PlayRequest(join=join))

            async def outgoing(q: asyncio.Queue[Any] = requests) -> Any:
                while (item := await q.get()) is not None:
                    yield item

            call = p.stub.Play(outgoing(), metadata=p.auth)
            first: Any = await asyncio.wait_for(call.read(), 20)
            streams[p.player_id] = (call, requests, first.update.view)
        # The later player's arrival (its player_back, I-41) reaches the earlier stream too.
        latest = max(s[2].seq for s in streams.values())
        for player_id, (call, requests, seen) in list(streams.items()):
            while seen.seq < latest:
                seen = (await asyncio.wait_for(call.read(), 20)).update.view
            streams[player_id] = (call, requests, seen)
        mover = next(p for p in (ann, bob) if _acts(streams[p.player_id][2]))
        other = bob if mover is ann else ann
        view = streams[mover.player_id][2]
        cmd = next_command(view, bots.random_bot, random.Random(1))
        assert cmd is not None

        async def send(p: Player, command_id: str, command: table_pb2.Command) -> None:
            play = gateway_pb2.PlayCommand(
                command_id=command_id, expected_seq=view.seq, command=command
            )
            await streams[p.player_id][1].put(gateway_pb2.PlayRequest(command=play))

        async def until_error(p: Player, command_id: str) -> list[Any]:
            got = []
            while True:
                message = await asyncio.wait_for(streams[p.player_id][0].read(), 20)
                got.append(message)
                if message.WhichOneof("kind") == "error":
                    assert message.error.command_id == command_id
                    return got

        refused = table_pb2.Command()
        refused.offer_rematch.SetInParent()  # the match is not over: refused, nothing changes
        await send(mover, "step", cmd)
        await send(mover, "no-1", refused)
        mine = await until_error(mover, "no-1")
        assert [m.WhichOneof("kind") for m in mine] == ["update", "error"]
        update = mine[0].update
        assert update.result.command_id == "step" and update.result.seq == update.seq
        assert update.result.request_no == 1 and mine[1].error.request_no == 2
        await send(other, "no-2", refused)
        theirs = await until_error(other, "no-2")
        assert [m.WhichOneof("kind") for m in theirs] == ["update", "error"]
        assert theirs[0].update.seq == update.seq and not theirs[0].update.HasField("result")
        assert list(theirs[0].update.events) == list(update.events)
        for call, requests, _ in streams.values():
            await requests.put(None)
            call.cancel()


async def test_rematch_through_the_gateway(cluster: dict[str, Any]) -> None:
    """I-32: offer and accept on the Play stream; a new match with a new escrow and seed."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob")
        table = await ann.create_table(
            table_pb2.TableOptions(profile="wagered", match_length=1, bet=100)
        )
        first = await bob.join(table.code)
        await bob.stub.LeaveTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=bob.auth
        )
        await _balances_settle([ann, bob], {ann.player_id: 5084, bob.player_id: 4900})
        ann_call, ann_q = await _open_stream(ann, table.table_id)
        bob_call, bob_q = await _open_stream(bob, table.table_id)
        offered = await _command(ann_call, ann_q, "offer_rematch", 1)
        assert offered.WhichOneof("kind") == "result"
        accepted = await _command(bob_call, bob_q, "accept_rematch", 2)
        assert accepted.WhichOneof("kind") == "result", accepted
        lobby = await ann.table(table.table_id)
        assert lobby.status == "dealt" and lobby.match_id == f"{table.table_id}-2"
        assert lobby.fingerprint != first.fingerprint  # a new seed
        view = await ann.view(table.table_id)
        assert view.match_id == lobby.match_id and phase_of(view) not in ("match_over", "closed")
        got = await _balances_settle([ann, bob], {ann.player_id: 4984, bob.player_id: 4800})
        assert got == {ann.player_id: 4984, bob.player_id: 4800}  # the new escrow
        for q in (ann_q, bob_q):
            await q.put(None)
        ann_call.cancel()
        bob_call.cancel()


async def test_rate_limits_answer_a_clear_error(tmp_path: Path, valkey_url: str) -> None:
    """Limits per address (Login) and per player: past them, RESOURCE_EXHAUSTED / RATE_LIMITED."""
    from services.common.host import ServiceHost
    from services.gateway.app import build_app

    host = ServiceHost(
        build_app({"BG_GRPC_PORT": "0", "BG_METRICS_PORT": "0", "BG_WS_PORT": "0",
                   "BG_REDIS_URL": valkey_url, "BG_RATE_PER_S": "2", "BG_RATE_PER_PEER_S": "4",
                   "BG_TOKEN_SECRET": SECRET})
    )  # fmt: skip
    await host.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
            player = Player(ch, "spammer")
            codes = []
            for _ in range(8):
                try:
                    await player.stub.Login(gateway_pb2.LoginRequest(guest_name="spammer"))
                    codes.append("OK")
                except grpc.aio.AioRpcError as exc:
                    assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                    codes.append(error_of(exc).code)
        assert codes[:2] == ["OK"] * 2 and "RATE_LIMITED" in codes[2:]
    finally:
        await host.stop()


async def test_leaderboards_through_the_gateway(cluster: dict[str, Any]) -> None:
    """I-13: a wagered win feeds the league; boards and profiles are read through the gateway."""
    from bg.leaderboard.v1 import leaderboard_pb2

    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob")
        table = await ann.create_table(
            table_pb2.TableOptions(profile="wagered", match_length=3, bet=1000, rated=True)
        )
        await bob.join(table.code)
        await bob.stub.LeaveTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=bob.auth
        )
        profile = None
        for _ in range(900):  # two hops through Kafka consumer groups: wallet, then leaderboard
            profile = await ann.stub.GetProfile(leaderboard_pb2.ProfileRequest(), metadata=ann.auth)
            if profile.league_diamonds:
                break
            await asyncio.sleep(0.1)
        log = (Path(cluster["data"]) / "up.log").read_text().splitlines()
        context = "\n".join(line for line in log if "leaderboard" in line or "wallet" in line)[
            -3000:
        ]
        assert profile is not None and profile.league_diamonds == 840, context
        assert profile.league_rank >= 1
        assert profile.trophies == 0  # won because bob left: no match-win trophies (I-12)
        top = await ann.stub.GetLeaderboard(
            leaderboard_pb2.TopRequest(board="league", limit=100), metadata=ann.auth
        )
        assert ann.player_id in [e.player_id for e in top.entries]
        rank = await ann.stub.GetRank(
            leaderboard_pb2.RankRequest(board="league", around=1), metadata=ann.auth
        )
        assert rank.rank == profile.league_rank and rank.score == 840
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await ann.stub.GetLeaderboard(
                leaderboard_pb2.TopRequest(board="karma"), metadata=ann.auth
            )
        assert error_of(bad.value).field == "board"
        # Issue 60: anyone's recent matches and record; what a match changed, your own only.
        seen = await bob.stub.GetMatchHistory(
            leaderboard_pb2.HistoryRequest(player_id=ann.player_id), metadata=bob.auth
        )
        match_id = seen.matches[0].match_id
        assert [(r.profile, r.wins, r.losses) for r in profile.record] == [("wagered", 1, 0)]
        asked = leaderboard_pb2.ChangesRequest(match_id=match_id, player_id=bob.player_id)
        mine = await ann.stub.GetMatchChanges(asked, metadata=ann.auth)  # the token's player's
        assert [(c.board, c.before, c.after) for c in mine.changes] == [("league", 0.0, 840.0)]
        assert not (await bob.stub.GetMatchChanges(asked, metadata=bob.auth)).changes
        trend = analysis_pb2.PlayerTrendRequest(player_id=ann.player_id)
        theirs = await bob.stub.GetErrorTrend(trend, metadata=bob.auth)
        own = await bob.stub.GetErrorTrend(analysis_pb2.PlayerTrendRequest(), metadata=bob.auth)
        assert theirs == own  # a player's error rates are theirs alone


async def test_a_spectator_sees_every_event_once_and_nothing_secret(
    cluster: dict[str, Any],
) -> None:
    """I-35: anyone may watch a public table: the same events as the players, each once and in
    order, with a spectator's view (nothing to act on); the seed appears only in the match's
    end. A private table cannot be watched, and a live public one is listed in the lobby."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob, cam = await _players(cluster, ch, "ann", "bob", "cam", grant=0)
        opts = table_pb2.TableOptions(profile="casual", match_length=1)
        private = await ann.create_table(opts)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in cam.stub.Watch(
                gateway_pb2.WatchRequest(table_id=private.table_id), metadata=cam.auth
            ):
                pass
        assert (error_from(refused.value) or errors_pb2.Error()).code == "NOT_WATCHABLE"

        table = await ann.create_table(opts, public=True)
        await bob.join(table.code)
        await ann.stub.StartTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
        )

        async def listed() -> bool:
            live = await cam.stub.ListTables(
                matchmaking_pb2.ListTablesRequest(live=True), metadata=cam.auth
            )
            return table.table_id in [t.table_id for t in live.tables]

        # Issue 41, item 19: a match nobody is at (both away from the deal, I-41) is not
        # listed as in play; it is once its players are at the table.
        assert not await listed()
        async with ann.session_for(table.table_id), bob.session_for(table.table_id):
            assert await listed()
            # A player who keeps their matches private (I-35's opt-out): nobody may watch, and
            # the match is not listed; changing their mind opens it again.
            privacy = gateway_pb2.PrivacyRequest(hide_from_spectators=True)
            await bob.stub.SetPrivacy(privacy, metadata=bob.auth)
            with pytest.raises(grpc.aio.AioRpcError) as hidden:
                async for _ in cam.stub.Watch(
                    gateway_pb2.WatchRequest(table_id=table.table_id), metadata=cam.auth
                ):
                    pass
            assert (error_from(hidden.value) or errors_pb2.Error()).code == "NOT_WATCHABLE"
            assert not await listed()
            privacy.hide_from_spectators = False
            await bob.stub.SetPrivacy(privacy, metadata=bob.auth)
            assert await listed()
        seen: list[Any] = []
        views: list[Any] = []

        async def spectate() -> None:
            watch = cam.stub.Watch(
                gateway_pb2.WatchRequest(table_id=table.table_id), metadata=cam.auth
            )
            async for message in watch:
                seen.extend(message.update.events)
                views.append(message.update.view)
                if phase_of(message.update.view) == "match_over":
                    return

        spectating = asyncio.create_task(spectate())
        terminal = await asyncio.create_subprocess_exec(
            str(BIN / "bgcluster"), "play", "--watch", table.table_id, "--name", "dee",
            "--gateway", cluster["gateway"], stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        await asyncio.gather(ann.play(table.table_id, 240), bob.play(table.table_id, 240))
        await asyncio.wait_for(spectating, 60)
        out, _ = await asyncio.wait_for(terminal.communicate(), 60)
        watched = out.decode()
        assert terminal.returncode == 0, watched
        assert "O: bob" in watched and "X: ann" in watched and "match over: " in watched
        assert "ann rolled" in watched and "bob moved" in watched
        async with ann.session_for(table.table_id) as replay:  # everything, from seq 0
            played = [e.event_id for e in replay.events]
        assert [e.event_id for e in seen] == played  # each once, in order, none missing
        ended = next(e.match_ended for e in seen if e.WhichOneof("body") == "match_ended")
        secret = ended.seed_hex.encode()
        before_end = [e for e in seen if e.WhichOneof("body") != "match_ended"]
        assert secret and not any(secret in e.SerializeToString() for e in before_end)
        assert not any(secret in v.SerializeToString() for v in views)
        assert all(v.spectator and not v.lit and not v.can_double for v in views)
        after = await cam.stub.ListTables(
            matchmaking_pb2.ListTablesRequest(live=True), metadata=cam.auth
        )
        assert table.table_id not in [t.table_id for t in after.tables]  # over: not live

        # Its export: the players' own only, in a format that exists.
        match_id = f"{table.table_id}-1"

        async def export(who: Player, fmt: str) -> Any:
            request = gateway_pb2.ExportMatchRequest(match_id=match_id, format=fmt)
            return await who.stub.ExportMatch(request, metadata=who.auth)

        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await export(ann, "pdf")
        assert (error_from(bad.value) or errors_pb2.Error()).code == "BAD_FORMAT"
        mat = None
        for _ in range(100):  # the archive comes through Kafka
            with contextlib.suppress(grpc.aio.AioRpcError):
                mat = await export(ann, "mat")
                break
            await asyncio.sleep(0.1)
        assert mat is not None and mat.filename == f"match-{match_id}.mat"
        assert mat.content.startswith(" 1 point match") and " ann : 0" in mat.content
        with pytest.raises(grpc.aio.AioRpcError) as stranger:
            await export(cam, "json")
        assert stranger.value.code() in (
            grpc.StatusCode.PERMISSION_DENIED,
            grpc.StatusCode.NOT_FOUND,
        )
        # Its analysis: to the players, and to a spectator of this public table (issue 28).
        for who in (ann, cam):
            found = await _analysis(who, match_id)
            assert list(found.player_ids) == [ann.player_id, bob.player_id] and found.decisions


async def _analysis(who: Player, match_id: str, seconds: float = 120) -> Any:
    """A match's analysis once done: it is queued from the event stream when the match ends."""
    request = analysis_pb2.GetAnalysisRequest(match_id=match_id)
    deadline = time.monotonic() + seconds
    while True:
        try:
            found = await who.stub.GetAnalysis(request, metadata=who.auth)
            if found.state == analysis_pb2.ANALYSIS_STATE_DONE:
                return found
        except grpc.aio.AioRpcError as exc:
            if error_of(exc).code != "UNKNOWN_MATCH":  # not consumed yet
                raise
        assert time.monotonic() < deadline, f"no analysis of {match_id} in {seconds:.0f} s"
        await asyncio.sleep(0.2)


async def test_the_analysis_of_a_match_goes_to_its_players_only(cluster: dict[str, Any]) -> None:
    """Issue 28, requirement 3: a finished private match is analysed off the event stream; its
    players read every decision (pointing at the archived move it judges) and each one's error
    rate; anyone else is told there is no such match, as for a match that never was; a bad id
    is refused; the operators' LookupPlayer shows the player's error rate match by match."""
    async with (
        grpc.aio.insecure_channel(cluster["gateway"]) as ch,
        grpc.aio.insecure_channel(cluster["identity"]) as ops,
    ):
        ann, bob, cam = await _players(cluster, ch, "ann", "bob", "cam", grant=0)
        table = await ann.create_table(table_pb2.TableOptions(profile="casual", match_length=1))
        await bob.join(table.code)
        await ann.stub.StartTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
        )
        await asyncio.gather(ann.play(table.table_id, 240), bob.play(table.table_id, 240))
        match_id = f"{table.table_id}-1"
        found = await _analysis(bob, match_id)
        archived = await bob.stub.GetArchivedMatch(
            leaderboard_pb2.ArchivedMatchRequest(match_id=match_id), metadata=bob.auth
        )
        kinds = {"move": "turn_ended", "double": "double_offered", "take": "double_taken",
                 "drop": "double_dropped"}  # fmt: skip
        for d in found.decisions:
            assert archived.moves[d.move_index].WhichOneof("body") == kinds[d.kind]
        assert [p.player_id for p in found.players] == [ann.player_id, bob.player_id]
        assert sum(p.decisions for p in found.players) == len(found.decisions)
        for who, request in (
            (cam, analysis_pb2.GetAnalysisRequest(match_id=match_id)),
            (cam, analysis_pb2.GetAnalysisRequest(match_id="no-such-match")),
            (ann, analysis_pb2.GetAnalysisRequest(match_id="")),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await who.stub.GetAnalysis(request, metadata=who.auth)
            expected = "MISSING" if not request.match_id else "UNKNOWN_MATCH"
            assert error_of(refused.value).code == expected

        admin = admin_pb2_grpc.AdminServiceStub(ops)
        login = await admin.OperatorLogin(
            admin_pb2.OperatorLoginRequest(
                name=cluster["admin"]["name"], key=cluster["admin"]["key"]
            )
        )
        record = await admin.LookupPlayer(
            admin_pb2.LookupPlayerRequest(player_id=ann.player_id, reason="fair-play check"),
            metadata=[("authorization", f"Bearer {login.token}")],
        )
        (row,) = record.error_trend.matches
        assert row.match_id == match_id and row.decisions == found.players[0].decisions
        assert record.error_trend.band and row.error_rate == pytest.approx(
            found.players[0].error_rate
        )


async def test_accounts_device_and_email_logins_refresh_and_logout(
    cluster: dict[str, Any],
) -> None:
    """A device login is the same player every time, with a refresh token that rotates; an
    email linked to it logs in too; logout ends the session; names come from the account."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        stub = gateway_pb2_grpc.GatewayServiceStub(ch)
        device = "d" * 8 + uuid.uuid4().hex
        first = await stub.Login(gateway_pb2.LoginRequest(device_id=device, display_name="ivy"))
        again = await stub.Login(gateway_pb2.LoginRequest(device_id=device))
        assert first.player_id == again.player_id and first.display_name == "ivy"
        assert first.player_id.startswith("p") and first.refresh_token
        auth = [("authorization", f"Bearer {first.token}")]
        # The demo starter grant (`bgcluster up`: 1000), credited once however often one logs in.
        assert (await stub.GetBalance(gateway_pb2.BalanceRequest(), metadata=auth)).balance == 1000
        guest = await stub.Login(gateway_pb2.LoginRequest(guest_name="passer-by"))
        guest_auth = [("authorization", f"Bearer {guest.token}")]
        assert (
            await stub.GetBalance(gateway_pb2.BalanceRequest(), metadata=guest_auth)
        ).balance == 0
        renewed = await stub.Refresh(gateway_pb2.RefreshRequest(refresh_token=first.refresh_token))
        assert renewed.player_id == first.player_id and renewed.refresh_token != first.refresh_token
        # Used again at once (two tabs renewing together): a race, not theft (the unit tests
        # show a later reuse ending the session).
        racing = await stub.Refresh(gateway_pb2.RefreshRequest(refresh_token=first.refresh_token))
        assert racing.player_id == first.player_id
        # Linked to an email: log in with it from elsewhere.
        await stub.LinkEmail(
            gateway_pb2.LinkEmailRequest(email="ivy@example.com", password="a long passphrase"),
            metadata=auth,
        )
        by_email = await stub.Login(
            gateway_pb2.LoginRequest(email="ivy@example.com", password="a long passphrase")
        )
        assert by_email.player_id == first.player_id
        names = await stub.GetNames(
            gateway_pb2.NamesRequest(player_ids=[first.player_id]), metadata=auth
        )
        assert dict(names.names) == {first.player_id: "ivy"}
        await stub.Logout(gateway_pb2.LogoutRequest(refresh_token=by_email.refresh_token))
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            await stub.Refresh(gateway_pb2.RefreshRequest(refresh_token=by_email.refresh_token))
        assert (error_from(ended.value) or errors_pb2.Error()).code == "REFRESH_REVOKED"
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await stub.Login(gateway_pb2.LoginRequest(device_id="too-short"))
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        # Deleting the account: its diamonds leave it (the books stay whole), and the device
        # starts afresh as a new player.
        await stub.DeleteAccount(gateway_pb2.DeleteAccountRequest(), metadata=auth)
        async with grpc.aio.insecure_channel(cluster["wallet"]) as wc:
            wallet = wallet_pb2_grpc.WalletServiceStub(wc)
            left = await wallet.GetBalance(wallet_pb2.GetBalanceRequest(player_id=first.player_id))
        assert left.balance == 0
        fresh = await stub.Login(gateway_pb2.LoginRequest(device_id=device, display_name="ivy"))
        assert fresh.player_id != first.player_id


async def test_the_bots_credential_signs_in_only_as_a_computer_seat(
    cluster: dict[str, Any],
) -> None:
    """The bots worker's service credential gets a token for a computer seat a table has, and
    for nothing else (a person's id, a seat no table has, or without the credential)."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        (ann,) = await _players(cluster, ch, "ann", grant=0)
        table = await ann.create_table(table_pb2.TableOptions(profile="casual", level="easy"))
        seat = next(p for p in table.player_ids if p.startswith("cpu-"))
        credential = [("x-service-credential", BOTS_SECRET)]

        async def login(player_id: str, metadata: list[tuple[str, str]]) -> Any:
            request = gateway_pb2.ServiceLoginRequest(player_id=player_id)
            return await ann.stub.ServiceLogin(request, metadata=metadata)

        bot = await login(seat, credential)
        assert bot.player_id == seat and bot.display_name == "CPU (easy)"
        view = await ann.stub.GetView(
            gateway_pb2.ViewRequest(table_id=table.table_id),
            metadata=[("authorization", f"Bearer {bot.token}")],
        )
        assert view.player_ids[view.seat] == seat  # it acts for that seat, as that seat
        for player_id, metadata, code in (
            (seat, [], "SERVICE_ONLY"),
            (seat, [("x-service-credential", "guess" * 8)], "SERVICE_ONLY"),
            (ann.player_id, credential, "CPU_SEATS_ONLY"),
            (f"cpu-easy-t{'0' * 16}", credential, None),  # no such table
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await login(player_id, metadata)
            assert refused.value.code() in (
                grpc.StatusCode.PERMISSION_DENIED,
                grpc.StatusCode.NOT_FOUND,
            )
            if code:
                assert (error_from(refused.value) or errors_pb2.Error()).code == code


async def test_your_own_seat_resumes_from_anywhere_and_the_newest_stream_takes_it(
    cluster: dict[str, Any],
) -> None:
    """Issue 27 item 1: `ListTables {mine}` lists a player's own tables (waiting, or in play),
    the party code of your own dealt table answers it as it is (no second seat or deal), a newer
    Play stream of the same player takes the seat from the older (SEAT_TAKEN) without the table
    counting them away, and a casual live table with both players away ends (W-2)."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob", grant=0)

        async def mine(player: Player) -> list[tuple[str, str]]:
            listed = await player.stub.ListTables(
                matchmaking_pb2.ListTablesRequest(mine=True), metadata=player.auth
            )
            return [(t.table_id, t.status) for t in listed.tables]

        table = await ann.create_table(table_pb2.TableOptions(profile="casual", match_length=1))
        assert await mine(ann) == [(table.table_id, "open")]
        assert await mine(bob) == []
        await bob.join(table.code)
        dealt = await ann.stub.StartTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
        )
        assert await mine(bob) == [(table.table_id, "dealt")]
        again = await bob.join(table.code)  # a reopened tab follows the old code or link
        assert (again.status, again.match_id) == ("dealt", dealt.match_id)

        older, older_requests = await _open_stream(bob, table.table_id)
        assert (await older.read()).update.view.seat == 1  # bob's seat, not a spectator's
        newer, newer_requests = await _open_stream(bob, table.table_id)
        first = await newer.read()
        assert first.update.view.seat == 1 and not first.update.view.spectator
        told = await older.read()
        while told.HasField("update"):  # the table's clock moved on meanwhile (an auto roll)
            told = await older.read()
        assert told.error.error.code == "SEAT_TAKEN"
        assert await older.read() is _EOF  # the older stream is over
        await asyncio.sleep(0.5)
        # bob is at the table on his newer stream; ann never opened one: away from the deal.
        assert list((await ann.view(table.table_id)).away) == [True, False]

        # Both players away (ann comes and goes).
        ann_call, ann_requests = await _open_stream(ann, table.table_id)
        await ann_call.read()
        ann_call.cancel()
        newer.cancel()

        async def closed() -> bool:
            return phase_of(await ann.view(table.table_id)) == "closed"

        await _until(closed, 60)  # 10 minutes x 0.05
        assert reason_of(await ann.view(table.table_id)) == "both_away"
        assert await mine(ann) == [] and await mine(bob) == []
        for requests in (older_requests, newer_requests, ann_requests):
            await requests.put(None)


async def test_a_hint_against_the_computer_and_none_where_help_is_not_allowed(
    cluster: dict[str, Any],
) -> None:
    """Issue 28, requirement 4: at the start of your move against the computer, `GetHint` gives
    the evaluator's best plays, best first, which the table accepts as they are; not on the
    other side's turn, and never at a table between people that is not a test game."""
    from evaluator.evaluate import default

    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob = await _players(cluster, ch, "ann", "bob", grant=0)

        async def hint(table_id: str) -> gateway_pb2.HintResponse:
            request = gateway_pb2.HintRequest(table_id=table_id, limit=3)
            reply: gateway_pb2.HintResponse = await ann.stub.GetHint(request, metadata=ann.auth)
            return reply

        table = await ann.create_table(table_pb2.TableOptions(profile="casual", level="easy"))
        async with ann.session_for(table.table_id) as session:

            def my_move(v: table_pb2.TableView) -> bool:
                return v.decider == v.seat and phase_of(v) in ("await_roll", "moving")

            view = await session.wait_for(lambda v: my_move(v) and not v.steps, 60)
            if phase_of(view) == "await_roll":
                await session.send(table_pb2.Command(roll=table_pb2.Empty()), view.seq)
                view = await session.wait_for(lambda v: phase_of(v) == "moving", 30)
            got = await hint(table.table_id)
            assert got.seq == view.seq and 1 <= len(got.plays) <= 3
            assert [p.equity for p in got.plays] == sorted(
                (p.equity for p in got.plays), reverse=True
            )
            start = Position(tuple(view.own), tuple(view.opponent))
            best = default().rank_plays_1ply(start, (view.dice[0], view.dice[1]))[0]
            steps = [(getattr(s, "from"), s.to) for s in got.plays[0].steps]
            assert steps == list(best.play.steps)
            assert abs(sum(got.plays[0].probabilities) - 1) < 1e-3
            play = table_pb2.Command(submit_play=table_pb2.Play(steps=got.plays[0].steps))
            await session.send(play, view.seq)  # the hint's play, as it came
            with pytest.raises(grpc.aio.AioRpcError) as not_now:
                await hint(table.table_id)
            assert error_of(not_now.value).code == "HINT_NOT_NOW"

        people = await ann.create_table(table_pb2.TableOptions(profile="scored", match_length=1))
        await bob.join(people.code)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await hint(people.table_id)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert error_of(refused.value).code == "HINT_NOT_ALLOWED"


async def _said(texts: Callable[[], list[str]], expected: list[str]) -> None:
    """Until a reader's chat reads `expected` (bounded), then a moment to show nothing else
    comes."""
    for _ in range(100):
        if texts() == expected:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    assert texts() == expected


async def test_table_chat_and_kibitz_over_grpc_and_the_websocket(cluster: dict[str, Any]) -> None:
    """Issue 29 req. 2: table chat reaches the two players' Play streams, kibitz the spectators'
    Watch streams (gRPC and WebSocket) and reaches the players only through GetChat once the
    match is over; a stranger's table and a bad message are refused, typed."""
    from websockets.asyncio.client import connect

    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob, cam, eve = await _players(cluster, ch, "ann", "bob", "cam", "eve", grant=0)
        opts = table_pb2.TableOptions(profile="casual", match_length=1)
        private = await eve.create_table(opts)
        table = await ann.create_table(opts, public=True)
        await bob.join(table.code)
        await ann.stub.StartTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ann.auth
        )

        def say(who: Player, text: str, channel: Any, table_id: str = table.table_id) -> Any:
            request = gateway_pb2.SendChatRequest(table_id=table_id, channel=channel, text=text)
            return who.stub.SendChat(request, metadata=who.auth)

        with pytest.raises(grpc.aio.AioRpcError) as stranger:
            await say(cam, "hello", gateway_pb2.CHAT_CHANNEL_KIBITZ, private.table_id)
        assert error_of(stranger.value).code == "NOT_WATCHABLE"
        with pytest.raises(grpc.aio.AioRpcError) as long:
            await say(ann, "x" * 301, gateway_pb2.CHAT_CHANNEL_TABLE)
        assert error_of(long.value).code == "CHAT_TOO_LONG"
        assert long.value.code() == grpc.StatusCode.INVALID_ARGUMENT

        state = json.loads((Path(cluster["data"]) / "cluster.json").read_text())
        ws_url = next(s["ws"] for s in state["services"] if s["name"] == "gateway")
        async with (
            ann.session_for(table.table_id) as ann_s,
            bob.session_for(table.table_id) as bob_s,
            connect(ws_url) as ws,
        ):
            watched: list[str] = []

            async def watch() -> None:
                request = gateway_pb2.WatchRequest(table_id=table.table_id)
                async for message in cam.stub.Watch(request, metadata=cam.auth):
                    if message.WhichOneof("kind") == "chat":
                        watched.append(message.chat.text)

            watching = asyncio.create_task(watch())
            dee = WsPlayer(ws, "dee", 3)
            login = await dee.call("Login", {"guestName": "dee"})
            dee.token = login["token"]
            await dee.call("Watch", {"tableId": table.table_id})
            pushed: list[str] = []

            async def ws_chat() -> None:
                async for raw in ws:
                    message = json.loads(raw)
                    if message.get("push") == "chat":
                        pushed.append(message["chat"]["text"])

            dee.reader.cancel()  # this test reads the socket's pushes itself from here
            reading = asyncio.create_task(ws_chat())
            await asyncio.sleep(0.5)  # both spectators' streams are open
            sent = await say(ann, "good luck", gateway_pb2.CHAT_CHANNEL_TABLE)
            assert sent.sender_id == ann.player_id and sent.message_id
            await say(cam, "ann is favourite", gateway_pb2.CHAT_CHANNEL_KIBITZ)
            await _said(lambda: [m.text for m in bob_s.chat], ["good luck"])
            await _said(lambda: [m.text for m in ann_s.chat], ["good luck"])  # no kibitz
            await _said(lambda: watched, ["ann is favourite"])  # no table chat
            await _said(lambda: pushed, ["ann is favourite"])
            watching.cancel()
            reading.cancel()

        async def history(who: Player) -> list[str]:
            request = gateway_pb2.GetChatRequest(table_id=table.table_id)
            return [m.text for m in (await who.stub.GetChat(request, metadata=who.auth)).messages]

        assert await history(bob) == ["good luck"]
        assert await history(cam) == ["ann is favourite"]
        await asyncio.gather(ann.play(table.table_id, 240), bob.play(table.table_id, 240))
        assert await history(bob) == ["good luck", "ann is favourite"]  # the match is over


async def test_friends_follow_challenge_and_block_over_grpc_and_the_websocket(
    cluster: dict[str, Any],
) -> None:
    """Issue 29 req. 3 on the real cluster: presence from the gateway's live streams (a Friends
    stream on gRPC and on the WebSocket, a Play stream), a challenge accepted and played to the
    end, a wagered one declined with the host's hold given back, and a block that ends the
    follow and refuses follow and challenge, typed."""
    from websockets.asyncio.client import connect

    def friends_of(view: gateway_pb2.FriendsView) -> dict[str, int]:
        return {f.player_id: f.status for f in view.friends}

    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann, bob, cam = await _players(cluster, ch, "ann", "bob", "cam")
        state = json.loads((Path(cluster["data"]) / "cluster.json").read_text())
        ws_url = next(s["ws"] for s in state["services"] if s["name"] == "gateway")
        async with connect(ws_url) as ws:
            dee = WsPlayer(ws, "dee", 3)
            dee.token = (await dee.call("Login", {"guestName": "dee"}))["token"]
            dee_id = _token_player(dee.token)
            opened = await dee.call("Friends", {})  # dee's Friends stream: dee is online
            assert opened["friends"] == []  # dee follows nobody yet

            async def follow(who: Player, other: str) -> gateway_pb2.FriendsView:
                request = gateway_pb2.FollowRequest(player_id=other, following=True)
                return await who.stub.Follow(request, metadata=who.auth)

            async def view(who: Player) -> gateway_pb2.FriendsView:
                return await who.stub.GetFriends(gateway_pb2.GetFriendsRequest(), metadata=who.auth)

            assert friends_of(await follow(ann, bob.player_id)) == {
                bob.player_id: gateway_pb2.FRIEND_STATUS_OFFLINE
            }
            await follow(ann, dee_id)
            await _until(lambda: _is(view(ann), dee_id, gateway_pb2.FRIEND_STATUS_ONLINE), 10)

            # bob's Friends stream on gRPC gets ann's challenge pushed.
            bob_views: asyncio.Queue[gateway_pb2.FriendsView] = asyncio.Queue()

            async def bob_stream() -> None:
                request = gateway_pb2.GetFriendsRequest()
                async for pushed in bob.stub.Friends(request, metadata=bob.auth):
                    await bob_views.put(pushed)

            streaming = asyncio.create_task(bob_stream())
            await asyncio.wait_for(bob_views.get(), 10)
            await _until(lambda: _is(view(ann), bob.player_id, gateway_pb2.FRIEND_STATUS_ONLINE))
            casual = table_pb2.TableOptions(profile="casual", match_length=1)
            sent = await ann.stub.Challenge(
                gateway_pb2.ChallengeRequest(player_id=bob.player_id, options=casual),
                metadata=ann.auth,
            )
            assert sent.table.host_id == ann.player_id and sent.challenge.status == "pending"
            while True:
                pushed = await asyncio.wait_for(bob_views.get(), 10)
                if pushed.received:
                    break
            assert pushed.received[0].challenge_id == sent.challenge.challenge_id
            assert pushed.received[0].from_name == "ann"
            accepted = await bob.stub.AnswerChallenge(
                gateway_pb2.AnswerChallengeRequest(
                    challenge_id=sent.challenge.challenge_id, accept=True
                ),
                metadata=bob.auth,
            )
            assert accepted.table.table_id == sent.table.table_id
            assert list(accepted.table.player_ids) == [ann.player_id, bob.player_id]
            await ann.stub.StartTable(
                matchmaking_pb2.TableRequest(table_id=sent.table.table_id), metadata=ann.auth
            )
            await follow(cam, ann.player_id)
            playing = asyncio.gather(
                ann.play(sent.table.table_id, 240), bob.play(sent.table.table_id, 240)
            )
            await _until(lambda: _is(view(cam), ann.player_id, gateway_pb2.FRIEND_STATUS_PLAYING))
            finished = await playing
            assert all(v.phase in FINISHED for v in finished)
            streaming.cancel()
            await _until(lambda: _is(view(ann), bob.player_id, gateway_pb2.FRIEND_STATUS_OFFLINE))

            # A wagered challenge to dee, declined over the WebSocket: the table closes and
            # ann's hold goes back.
            before = await ann.balance()
            wagered = table_pb2.TableOptions(profile="wagered", match_length=1, bet=100)
            offered = await ann.stub.Challenge(
                gateway_pb2.ChallengeRequest(player_id=dee_id, options=wagered),
                metadata=ann.auth,
            )
            while True:
                pushed_json = await asyncio.wait_for(dee.friends.get(), 10)
                if pushed_json.get("received"):
                    break
            challenge_id = pushed_json["received"][0]["challengeId"]
            assert challenge_id == offered.challenge.challenge_id
            refused = await dee.answer("AnswerChallenge", {"challengeId": "nope", "accept": True})
            assert refused["error"]["code"] == "UNKNOWN_CHALLENGE"
            declined = await dee.call("AnswerChallenge", {"challengeId": challenge_id})
            assert declined["challenge"]["status"] == "declined"
            table = await ann.stub.GetTable(
                matchmaking_pb2.TableRequest(table_id=offered.table.table_id), metadata=ann.auth
            )
            assert table.status == "closed"
            assert await _balances_settle([ann], {ann.player_id: before}) == {ann.player_id: before}

            # dee blocks ann: her follow ends; she can neither follow nor challenge dee.
            blocked = await dee.call("Block", {"playerId": ann.player_id, "blocked": True})
            assert blocked["blocked"] == [ann.player_id]
            assert dee_id not in friends_of(await view(ann))
            with pytest.raises(grpc.aio.AioRpcError) as no_follow:
                await follow(ann, dee_id)
            assert error_of(no_follow.value).code == "FRIEND_BLOCKED"
            assert no_follow.value.code() == grpc.StatusCode.PERMISSION_DENIED
            with pytest.raises(grpc.aio.AioRpcError) as no_challenge:
                await ann.stub.Challenge(
                    gateway_pb2.ChallengeRequest(player_id=dee_id), metadata=ann.auth
                )
            assert error_of(no_challenge.value).code == "FRIEND_BLOCKED"  # issue 41, item 12
            with pytest.raises(grpc.aio.AioRpcError) as self_follow:
                await follow(ann, ann.player_id)
            assert error_of(self_follow.value).code == "FRIEND_SELF"
            twice = await dee.answer("Friends", {})
            assert twice["error"]["code"] == "ALREADY_OPEN"


async def _is(view: Awaitable[gateway_pb2.FriendsView], player: str, status: int) -> bool:
    return any(f.player_id == player and f.status == status for f in (await view).friends)


def _token_player(token: str) -> str:
    return TokenSigner(SECRET, 60).verify(token).player_id
