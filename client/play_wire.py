"""The Play protocol from a seat's side: one stream, act on pushed views.

Shared by every program that plays through the gateway: this `client` package (scripted players,
the demo, the terminal client) and the bots worker, the one service that may import from
`client` (tests/project/test_layout.py). A `PlaySession` keeps the latest `SeatUpdate` view the
gateway pushed; `send` waits for the command's result or error and then for the view that shows
it, so a caller never needs GetView. `next_command` is the engine bots' move for a view.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.table.v1 import table_pb2
from engine import bots
from engine.position import Position
from engine.vocabulary import EndReason, Phase
from services.contracts.vocabulary import FINISHED, from_proto

P = events_pb2.Phase


def phase_of(v: table_pb2.TableView) -> Phase | None:
    """The view's phase as the engine names it ("await_roll", ...)."""
    return from_proto(v.phase, Phase)


def reason_of(v: table_pb2.TableView) -> EndReason | None:
    """Why the match ended or closed, as the engine names it ("points", ...), or None."""
    return from_proto(v.end_reason, EndReason)


def next_command(
    v: table_pb2.TableView,
    choose: bots.Strategy,
    rng: random.Random,
    cube: Callable[[Position, bots.MatchScore], bots.CubeAdvice] = bots.cube_advice,
) -> table_pb2.Command | None:
    """What a bot playing from view `v` sends now (None: not its move); `cube` advises from the
    side of the player on roll in the position it is given, at the score from that side."""
    if v.decider != v.seat or v.phase in (P.PHASE_BETWEEN_GAMES, *FINISHED):
        return None
    cmd = table_pb2.Command()
    if v.phase == P.PHASE_AWAIT_ROLL:
        mine = Position(tuple(v.own), tuple(v.opponent))
        if v.can_double and cube(mine, _score(v, v.seat)).double:
            cmd.offer_double.SetInParent()
        else:
            cmd.roll.SetInParent()
    elif v.phase == P.PHASE_DOUBLE_OFFERED:
        if cube(Position(tuple(v.opponent), tuple(v.own)), _score(v, 1 - v.seat)).take:
            cmd.take.SetInParent()
        else:
            cmd.drop.SetInParent()
    elif v.phase == P.PHASE_MOVING and len(v.dice) == 2 and not v.steps:
        play = choose(Position(tuple(v.own), tuple(v.opponent)), (v.dice[0], v.dice[1]), rng)
        if play is None:
            cmd.confirm.SetInParent()
        for frm, to in play.steps if play else ():
            cmd.submit_play.steps.add(**{"from": frm, "to": to})
    elif v.phase in (P.PHASE_MOVING, P.PHASE_CONFIRMING, P.PHASE_NO_MOVE):
        cmd.confirm.SetInParent()
    else:
        return None
    return cmd


def _score(v: table_pb2.TableView, doubler: int) -> bots.MatchScore:
    """The match score from the doubler's side (a cube in a match to 1 is money-like: 1-away)."""
    length = max(v.match_length, 1)
    score = list(v.score) or [0, 0]
    me, them = length - score[doubler], length - score[1 - doubler]
    return bots.MatchScore(me, them, max(v.cube, 1), not v.crawford and min(me, them) == 1)


class CommandRefused(Exception):
    def __init__(self, error: Any) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.code = error.code
        self.error = error


class PlaySession:
    """One Play stream. `updates` collects every pushed SeatUpdate in order."""

    def __init__(
        self,
        stub: gateway_pb2_grpc.GatewayServiceAsyncStub,
        table_id: str,
        metadata: list[tuple[str, str]],
        from_seq: int = 0,
        on_update: Callable[[gateway_pb2.SeatUpdate], None] | None = None,
        results_in_updates: bool = True,
    ) -> None:
        self.stub = stub
        self.results_in_updates = results_in_updates  # answers ride on updates (Join's flag)
        self.table_id = table_id
        self.metadata = metadata
        self.from_seq = from_seq
        self.on_update = on_update
        self.view: table_pb2.TableView | None = None
        self.events: list[events_pb2.TableEvent] = []
        self.chat: list[gateway_pb2.ChatMessage] = []  # the table chat pushed to this seat
        self.commands = 0
        self.errors: list[str] = []
        self._requests: asyncio.Queue[gateway_pb2.PlayRequest | None] = asyncio.Queue()
        self._answers: dict[str, asyncio.Future[Any]] = {}
        self._changed = asyncio.Event()
        self._call: Any = None
        self._reader: asyncio.Task[None] | None = None
        self.closed: BaseException | None = None

    async def __aenter__(self) -> PlaySession:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self, timeout_s: float = 30.0) -> table_pb2.TableView:
        """Join; returns the first pushed view."""
        join = gateway_pb2.Join(
            table_id=self.table_id,
            from_seq=self.from_seq,
            results_in_updates=self.results_in_updates,
        )
        await self._requests.put(gateway_pb2.PlayRequest(join=join))
        self._call = self.stub.Play(self._outgoing(), metadata=self.metadata)
        self._reader = asyncio.create_task(self._read())
        await self.wait_for(lambda v: True, timeout_s)
        assert self.view is not None
        return self.view

    async def _outgoing(self) -> AsyncIterator[gateway_pb2.PlayRequest]:
        while (item := await self._requests.get()) is not None:
            yield item

    async def _read(self) -> None:
        # One reader task: cancelling a pending read() would cancel the whole call.
        try:
            async for message in self._call:
                kind = message.WhichOneof("kind")
                if kind == "update":
                    update = message.update
                    self.events.extend(update.events)
                    if self.view is None or update.view.seq >= self.view.seq:
                        self.view = update.view
                    if self.on_update is not None:
                        self.on_update(update)
                    self._changed.set()
                    if update.HasField("result"):  # the answer rode on the update
                        self._answer(gateway_pb2.PlayUpdate(result=update.result))
                elif kind in ("result", "error"):
                    self._answer(message)
                elif kind == "chat":
                    self.chat.append(message.chat)
                    self._changed.set()
        except grpc.aio.AioRpcError as exc:
            self.closed = exc
        finally:
            if self.closed is None:
                self.closed = EOFError("the Play stream ended")
            self._changed.set()
            for future in self._answers.values():
                if not future.done():
                    future.set_exception(self.closed)

    def _answer(self, message: gateway_pb2.PlayUpdate) -> None:
        kind = message.WhichOneof("kind")
        assert kind is not None
        future = self._answers.pop(getattr(message, kind).command_id, None)
        if future is not None and not future.done():
            future.set_result(message)

    async def wait_for(
        self, ready: Callable[[table_pb2.TableView], bool], timeout_s: float
    ) -> table_pb2.TableView:
        """The latest view once `ready(view)` holds (raises if the stream ends first)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            if self.view is not None and ready(self.view):
                return self.view
            if self.closed is not None:
                raise self.closed
            self._changed.clear()
            left = deadline - loop.time()
            if left <= 0:
                raise TimeoutError(f"no such view on {self.table_id} within {timeout_s}s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def wait_newer(self, seq: int, timeout_s: float) -> table_pb2.TableView:
        """The first pushed view past `seq`."""
        return await self.wait_for(lambda v: v.seq > seq, timeout_s)

    async def send(
        self,
        cmd: table_pb2.Command,
        expected_seq: int = 0,
        timeout_s: float = 30.0,
        command_id: str = "",
    ) -> gateway_pb2.CommandResult:
        """Send a command (`command_id`: a fresh one unless given); returns its result once the
        pushed view shows it (CommandRefused when the gateway or the table refused it)."""
        if self.closed is not None:
            raise self.closed  # the stream is gone: no answer would ever come
        command_id = command_id or uuid.uuid4().hex
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._answers[command_id] = future
        command = gateway_pb2.PlayCommand(
            command_id=command_id, expected_seq=expected_seq, command=cmd
        )
        await self._requests.put(gateway_pb2.PlayRequest(command=command))
        self.commands += 1
        answer = await asyncio.wait_for(future, timeout_s)
        if answer.WhichOneof("kind") == "error":
            self.errors.append(answer.error.error.code)
            raise CommandRefused(answer.error.error)
        result: gateway_pb2.CommandResult = answer.result
        await self.wait_for(lambda v: v.seq >= result.seq, timeout_s)
        return result

    async def play_out(
        self,
        decide: Callable[[table_pb2.TableView], table_pb2.Command | None],
        timeout_s: float = 300.0,
        think_s: float | Callable[[table_pb2.Command], float] = 0.0,
    ) -> table_pb2.TableView:
        """Act on every pushed view until the match is over; returns the last view. With
        `think_s`, wait that long before each command, as a person would (load tests); a
        function of the command says how long for each (a simulated person's think times)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise TimeoutError(f"match on {self.table_id} not over after {timeout_s}s")
            v = self.view
            assert v is not None
            if v.phase in FINISHED:
                return v
            cmd = decide(v)
            if cmd is None:
                await self.wait_newer(v.seq, left)
                continue
            pause = think_s(cmd) if callable(think_s) else think_s
            if pause:
                await asyncio.sleep(min(pause, left))
                if self.view is not v:
                    continue  # the table moved on meanwhile (a clock): decide afresh
            try:
                await self.send(cmd, expected_seq=v.seq, timeout_s=min(left, 30.0))
            except CommandRefused as refused:
                if refused.code == "RATE_LIMITED":
                    await asyncio.sleep(0.2)  # back off, as a polite client does
                    continue
                # STALE_SEQ, NOT_YOUR_TURN...: the table moved on (a clock); act on its update.
                with contextlib.suppress(TimeoutError):
                    await self.wait_newer(v.seq, min(left, 2.0))

    async def close(self) -> None:
        await self._requests.put(None)
        if self._call is not None:
            self._call.cancel()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await self._reader
