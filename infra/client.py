"""A scripted player of the gateway's gRPC API (demo, tests): log in, use the lobby, and play
whole matches over the Play stream, choosing legal plays with an engine bot from its own view."""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from typing import Any

import grpc

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from engine import bots
from engine.position import Position


def next_command(v: Any, choose: bots.Strategy, rng: random.Random) -> table_pb2.Command | None:
    """What a bot playing from view `v` sends now (None: not its move). Shared by the scripted
    players, the bots worker and the Locust users, so they all play by the same rules."""
    if v.decider != v.seat or v.phase in ("between_games", "match_over", "closed"):
        return None
    cmd = table_pb2.Command()
    if v.phase == "await_roll":
        if v.can_double and bots.cube_advice(Position(tuple(v.own), tuple(v.opponent))).double:
            cmd.offer_double.SetInParent()
        else:
            cmd.roll.SetInParent()
    elif v.phase == "double_offered":
        if bots.cube_advice(Position(tuple(v.opponent), tuple(v.own))).take:
            cmd.take.SetInParent()
        else:
            cmd.drop.SetInParent()
    elif v.phase == "moving" and len(v.dice) == 2 and not v.steps:
        play = choose(Position(tuple(v.own), tuple(v.opponent)), (v.dice[0], v.dice[1]), rng)
        if play is None:
            cmd.confirm.SetInParent()
        for frm, to in play.steps if play else ():
            step = cmd.submit_play.steps.add()
            setattr(step, "from", frm)
            step.to = to
    elif v.phase in ("moving", "confirming", "no_move"):
        cmd.confirm.SetInParent()
    else:
        return None
    return cmd


class Player:
    def __init__(
        self, channel: grpc.aio.Channel, name: str, strategy: str = "normal", seed: int = 0
    ) -> None:
        self.stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        self.name = name
        self.token = ""
        self.player_id = ""
        self.choose = bots.STRATEGIES[strategy]
        self.rng = random.Random(seed)
        self.commands = 0
        self.errors: list[str] = []

    async def rpc(self, method: Any, request: Any, auth: bool = True) -> Any:
        """A unary call; over the connection's rate limit, back off and retry (politely)."""
        for _ in range(200):
            try:
                return await method(request, metadata=self.auth if auth else None)
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise
                await asyncio.sleep(0.1)
        raise TimeoutError("rate limited for too long")

    @property
    def auth(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")]

    async def login(self) -> str:
        reply = await self.rpc(
            self.stub.Login, gateway_pb2.LoginRequest(guest_name=self.name), auth=False
        )
        self.token, self.player_id = reply.token, reply.player_id
        return self.player_id

    async def create_table(self, options: table_pb2.TableOptions, public: bool = False) -> Any:
        request = matchmaking_pb2.CreateTableRequest(options=options, public=public)
        return await self.rpc(self.stub.CreateTable, request)

    async def join(self, code: str) -> Any:
        return await self.rpc(self.stub.JoinByCode, matchmaking_pb2.JoinByCodeRequest(code=code))

    async def table(self, table_id: str) -> Any:
        return await self.rpc(self.stub.GetTable, matchmaking_pb2.TableRequest(table_id=table_id))

    async def view(self, table_id: str) -> Any:
        return await self.rpc(self.stub.GetView, gateway_pb2.ViewRequest(table_id=table_id))

    async def record(self, table_id: str, match_id: str) -> Any:
        request = table_pb2.GetMatchRecordRequest(table_id=table_id, match_id=match_id)
        return await self.rpc(self.stub.GetMatchRecord, request)

    async def balance(self) -> int:
        return int((await self.rpc(self.stub.GetBalance, gateway_pb2.BalanceRequest())).balance)

    def decide(self, v: Any) -> table_pb2.Command | None:
        """The next command for view `v` when this player must act, else None."""
        return next_command(v, self.choose, self.rng)

    async def play(self, table_id: str, timeout_s: float = 300.0) -> Any:
        """Play until the match is over; returns the last view."""
        requests: asyncio.Queue[gateway_pb2.PlayRequest | None] = asyncio.Queue()
        await requests.put(gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table_id)))

        async def outgoing() -> Any:
            while True:
                item = await requests.get()
                if item is None:
                    return
                yield item

        call = self.stub.Play(outgoing(), metadata=self.auth)
        updates: asyncio.Queue[Any] = asyncio.Queue()

        async def incoming() -> None:
            # Read in one task: cancelling a pending read() would cancel the whole call.
            async for update in call:
                await updates.put(update)

        reader = asyncio.create_task(incoming())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            while loop.time() < deadline:
                v = await self.view(table_id)
                if v.phase in ("match_over", "closed"):
                    return v
                cmd = self.decide(v)
                if cmd is not None:
                    command_id = uuid.uuid4().hex
                    await requests.put(
                        gateway_pb2.PlayRequest(
                            command=gateway_pb2.PlayCommand(
                                command_id=command_id, expected_seq=v.seq, command=cmd
                            )
                        )
                    )
                    self.commands += 1
                    while True:  # until this command's answer (events may come first)
                        update = await asyncio.wait_for(updates.get(), 30)
                        kind = update.WhichOneof("kind")
                        if (
                            kind in ("result", "error")
                            and getattr(update, kind).command_id == command_id
                        ):
                            if kind == "error":
                                self.errors.append(update.error.error.code)
                                if update.error.error.code == "RATE_LIMITED":
                                    await asyncio.sleep(0.2)  # back off, as a polite client does
                            break
                else:
                    # Not our move: wait for the table to change (an event), then look again.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(updates.get(), 2.0)
            raise TimeoutError(f"{self.name}: match not over after {timeout_s}s")
        finally:
            await requests.put(None)
            call.cancel()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await reader
