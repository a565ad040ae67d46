"""A scripted player of the gateway's gRPC API (demo, tests, terminal): log in, use the lobby,
and play whole matches from the views the Play stream pushes, choosing legal plays with an
engine bot. It never calls GetView while playing."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

import grpc

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.play_wire import PlaySession, next_command
from engine import bots
from wire.errors import error_from

__all__ = ["PlaySession", "Player", "next_command"]
# A call's answer may have been lost: a request with a request id is sent again.
LOST = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED)


class Player:
    def __init__(
        self,
        channel: grpc.aio.Channel,
        name: str,
        strategy: str = "normal",
        seed: int = 0,
        think_s: float | Callable[[table_pb2.Command], float] = 0.0,
    ) -> None:
        self.stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        self.name = name
        self.token = ""
        self.player_id = ""
        self.choose = bots.STRATEGIES[strategy]
        self.rng = random.Random(seed)
        self.commands = 0
        self.errors: list[str] = []
        self.session: PlaySession | None = None
        self.think_s = think_s  # seconds before each command, as a person takes (load tests)

    async def rpc(self, method: Any, request: Any, auth: bool = True) -> Any:
        """A unary call; over the rate limit, wait as the answer says and retry. A request with
        a `request_id` is also sent again when its answer was lost (UNAVAILABLE, a deadline):
        the retry answers what the first call did, so nothing is staked or seated twice."""
        retry_lost = bool(getattr(request, "request_id", ""))
        deadline = time.monotonic() + 120  # retried for two minutes at most
        while time.monotonic() < deadline:
            try:
                return await method(request, metadata=self.auth if auth else None, timeout=15)
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    detail = error_from(exc)
                    wait_ms = int(detail.metadata.get("retry_after_ms", "100")) if detail else 100
                    await asyncio.sleep(min(wait_ms, 1000) / 1000)
                elif retry_lost and exc.code() in LOST:
                    await asyncio.sleep(0.2)
                else:
                    raise
        raise TimeoutError("no answer for too long")

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
        request = matchmaking_pb2.CreateTableRequest(
            options=options, public=public, request_id=uuid.uuid4().hex
        )
        return await self.rpc(self.stub.CreateTable, request)

    async def join(self, code: str) -> Any:
        request = matchmaking_pb2.JoinByCodeRequest(code=code, request_id=uuid.uuid4().hex)
        return await self.rpc(self.stub.JoinByCode, request)

    async def quick_match(self, options: table_pb2.TableOptions) -> Any:
        request = matchmaking_pb2.QuickMatchRequest(options=options, request_id=uuid.uuid4().hex)
        return await self.rpc(self.stub.QuickMatch, request)

    async def table(self, table_id: str) -> Any:
        return await self.rpc(self.stub.GetTable, matchmaking_pb2.TableRequest(table_id=table_id))

    async def view(self, table_id: str) -> Any:
        """GetView: only to resynchronise (the Play stream pushes every view)."""
        return await self.rpc(self.stub.GetView, gateway_pb2.ViewRequest(table_id=table_id))

    async def record(self, table_id: str, match_id: str) -> Any:
        request = table_pb2.GetMatchRecordRequest(table_id=table_id, match_id=match_id)
        return await self.rpc(self.stub.GetMatchRecord, request)

    async def balance(self) -> int:
        return int((await self.rpc(self.stub.GetBalance, gateway_pb2.BalanceRequest())).balance)

    def decide(self, v: table_pb2.TableView) -> table_pb2.Command | None:
        """The next command for view `v` when this player must act, else None."""
        return next_command(v, self.choose, self.rng)

    def session_for(
        self, table_id: str, from_seq: int = 0, results_in_updates: bool = True
    ) -> PlaySession:
        return PlaySession(
            self.stub, table_id, self.auth, from_seq, results_in_updates=results_in_updates
        )

    async def play(self, table_id: str, timeout_s: float = 300.0) -> table_pb2.TableView:
        """Play until the match is over, from pushed views only; returns the last view."""
        async with self.session_for(table_id) as session:
            self.session = session
            try:
                return await session.play_out(self.decide, timeout_s, self.think_s)
            finally:
                self.session = None
                self.commands += session.commands
                self.errors += session.errors

    @property
    def commands_sent(self) -> int:
        """Commands sent so far, the live session's included (a load test reads it mid-match)."""
        return self.commands + (self.session.commands if self.session else 0)
