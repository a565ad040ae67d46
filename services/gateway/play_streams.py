"""The gateway's streams: a seat's Play stream (its commands in, the table's updates out) and a
spectator's Watch stream (I-35), with the presence reports a stream's start and end make.

Each stream subscribes to its table's feed before it reads the state, so no commit falls
between the two; the relay (services/gateway/seat_relay.py) sends each event once and in order,
gaps filled, with the answers to the seat's commands in order among them. A stream's updates
go to the transport's `write` (gRPC's context.write, the WebSocket's answers), not yielded:
when the client goes away the handler task is cancelled and the presence report runs at once,
instead of whenever an abandoned generator is collected. A stream that cannot open raises its
ServiceError, which the transport answers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import cast

import grpc
from redis.exceptions import RedisError

from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.errors import (
    InvalidArgument,
    PermissionDenied,
    ServiceError,
    infrastructure_failure,
)
from services.gateway import edge_bounds
from services.gateway.callers import Caller, Callers
from services.gateway.chat_delivery import ChatDelivery, Listener
from services.gateway.command_lines import CommandLines
from services.gateway.feed import Subscription, TableFeed
from services.gateway.live_streams import LiveStreams, Queue, stream_id
from services.gateway.metrics import GatewayMetrics
from services.gateway.ports import LobbyPort
from services.gateway.presence import Presence
from services.gateway.privacy import Privacy
from services.gateway.seat_relay import END, play_update, relay_updates
from services.gateway.spectator_views import SpectatorViews
from services.gateway.table_calls import TableCalls

log = logging.getLogger("bg.gateway")
Write = Callable[[gateway_pb2.PlayUpdate], Awaitable[None]]  # where a stream's updates go
# A stream refused as it opens reads the client's messages until it goes quiet, then refuses
# (`_drained`): a write still on its way when the refusal lands is the client's INTERNAL. Quiet
# for 0.5 s: at 0.25 one forged stream of 600 opened at once still came back INTERNAL on a
# loaded test box (a fresh clone's `make test`, 2026-12-06); only a refused open waits for it.
DRAIN_QUIET_S = 0.5
DRAIN_MOST_S = 2.0


class PlayStreams:
    def __init__(
        self,
        callers: Callers,
        tables: TableCalls,
        lines: CommandLines,
        lobby: LobbyPort,
        feed: TableFeed,
        presence: Presence,
        privacy: Privacy,
        live: LiveStreams,
        chat: ChatDelivery,
        metrics: GatewayMetrics | None = None,
    ) -> None:
        self.callers = callers
        self.tables = tables  # a table's views and presence reports, to its owner first
        self.lines = lines  # commands to the tables' owners (services/gateway/command_lines.py)
        self.lobby = lobby
        self.feed = feed
        self.presence = presence
        self.privacy = privacy
        self.live = live  # each player's streams here: a ban ends them (Bans(on_ban=...))
        self.chat = chat  # the tables' chat, delivered on the streams here
        self.command_seconds = (metrics or GatewayMetrics.unregistered()).commands
        self.spectators = SpectatorViews(self._spectator_view)
        self._background: set[asyncio.Task[None]] = set()

    # -- a seat's stream ---------------------------------------------------------------------

    async def play(
        self, requests: AsyncIterator[gateway_pb2.PlayRequest], caller: Caller, write: Write
    ) -> None:
        try:
            player = self.callers.player(caller)
            try:
                first = await anext(requests)
            except StopAsyncIteration:
                return
            if first.WhichOneof("kind") != "join":
                raise InvalidArgument(
                    "JOIN_FIRST", "the first message names the table", field="join"
                )
            table_id = edge_bounds.table_id(first.join.table_id, "join.table_id")
        except ServiceError:
            await _drained(requests)
            raise
        sub = await self.feed.subscribe(table_id)
        stream = stream_id()
        try:
            view = await self._seat_view(table_id, player)  # the seat is the caller's
            # At the table before the first update is sent (I-41: a player is away until their
            # first stream), so that update holds the player_back and a command decided on its
            # view is not STALE_SEQ.
            first_here = await self.presence.opened(table_id, player, stream)
            if first_here and await self.report(table_id, player, True) > view.seq:
                view = await self._seat_view(table_id, player)
            backlog = await self.feed.events_between(table_id, first.join.from_seq, view.seq)
        except (ServiceError, RedisError) as exc:
            await self._stream_closed(sub, player, stream)
            await _drained(requests)
            raise infrastructure_failure(exc) or cast(ServiceError, exc) from None
        seat = view.seat
        queue: Queue = asyncio.Queue(maxsize=1000)
        await queue.put(
            play_update(table_id, gateway_pb2.SeatUpdate(seq=view.seq, events=backlog, view=view))
        )
        self.live.opened(player, queue, table_id, stream)
        with contextlib.suppress(RedisError):  # at most once, as the notice itself
            await self.feed.take_seat(table_id, player, stream)
        commands = asyncio.create_task(self._commands(requests, sub, player, seat))
        pushes = asyncio.create_task(
            self._pushes(sub, player, seat, view.seq, queue, first.join.results_in_updates)
        )
        listener = Listener(table_id, player, True, partial(_offer, queue))
        self.chat.listen(listener)  # registered here: the finally below lets go of it
        try:
            while (update := await queue.get()) is not None:
                await write(update)
        finally:
            self.chat.unlisten(listener)
            self.live.closed(player, queue)
            for task in (commands, pushes):
                task.cancel()
            # The presence report runs in its own task: a second cancellation of this handler
            # (the call ending while we clean up) must not swallow the disconnect.
            left = asyncio.create_task(self._stream_closed(sub, player, stream, commands, pushes))
            self._background.add(left)
            left.add_done_callback(self._background.discard)

    async def _seat_view(self, table_id: str, player: str) -> table_pb2.TableView:
        return await self.tables.view(table_pb2.GetViewRequest(table_id=table_id, player_id=player))

    async def _pushes(
        self, sub: Subscription, player: str, seat: int, last: int, queue: Queue, combine: bool
    ) -> None:
        """The table's updates for this seat, each event once and in order, gaps filled, and
        the answers to its commands."""
        table_id = sub.table_id

        async def fresh() -> table_pb2.TableView:
            return await self._seat_view(table_id, player)

        async def pushed(update: table_pb2.TableUpdate) -> table_pb2.TableView | None:
            return _view_of(update, player, seat)

        await relay_updates(self.feed, sub, last, queue, fresh, pushed, combine)

    async def _commands(
        self,
        requests: AsyncIterator[gateway_pb2.PlayRequest],
        sub: Subscription,
        player: str,
        seat: int,
    ) -> None:
        """The stream's commands, one at a time, each answered through `sub` (in order with
        the table's updates, see services/gateway/feed.py)."""
        table_id = sub.table_id
        request_no = 0  # the join was 0
        try:
            async for message in requests:
                request_no += 1
                started = time.perf_counter()
                sub.busy = True  # the table's updates wait for the answer (feed.py)
                answer, seq = await self._command(message, table_id, player, seat, request_no)
                self.command_seconds.observe(time.perf_counter() - started)
                if seq:
                    self.feed.answer(table_id, seq, sub, answer)
                else:
                    self.feed.alone(table_id, sub, answer)
        finally:
            self.feed.alone(table_id, sub, END)

    async def _command(
        self,
        message: gateway_pb2.PlayRequest,
        table_id: str,
        player: str,
        seat: int,
        request_no: int,
    ) -> tuple[gateway_pb2.PlayUpdate, int]:
        """One command to the table's owner: its answer, and the seq of the commit it made (0:
        none, the answer goes alone)."""
        cmd = message.command
        try:
            if message.WhichOneof("kind") != "command":
                raise InvalidArgument("MALFORMED", "after join, send commands", field="command")
            command_id = edge_bounds.bounded(cmd.command_id, "command.command_id", 64)
            self.callers.acting(player)
            request = table_pb2.SubmitCommandRequest(
                table_id=table_id,
                player_id=player,
                seat=seat,
                # an id makes the command safe to hand to another replica on failover
                command_id=command_id or f"gw-{uuid.uuid4().hex}",
                expected_seq=cmd.expected_seq,
                command=cmd.command,
            )
            reply = await self.lines.submit(request, timeout=10)
            if cmd.command.WhichOneof("kind") == "accept_rematch" and not reply.duplicate:
                await self._deal_rematch(table_id, player)
            result = gateway_pb2.CommandResult(
                command_id=command_id,
                seq=reply.seq,
                duplicate=reply.duplicate,
                request_no=request_no,
            )
            answer = gateway_pb2.PlayUpdate(result=result, table_id=table_id)
            return answer, 0 if reply.duplicate else reply.seq
        except ServiceError as err:
            # An id over its bound is never cut to fit: the cut could be another command's id.
            # The client matches such an answer on request_no.
            sent = cmd.command_id if len(cmd.command_id) <= 64 else ""
            failed = gateway_pb2.CommandError(
                command_id=sent,
                error=err.to_proto(),
                request_no=request_no,
                status=err.status.name,
            )
            return gateway_pb2.PlayUpdate(error=failed, table_id=table_id), 0

    async def _deal_rematch(self, table_id: str, player: str) -> None:
        """I-32: both agreed; matchmaking deals the new match on this table."""
        rematch = matchmaking_pb2.TableRequest(player_id=player, table_id=table_id)
        await self.lobby.rematch(rematch)

    async def _stream_closed(
        self, sub: Subscription, player: str, stream: str, *tasks: asyncio.Task[None]
    ) -> None:
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.feed.unsubscribe(sub)
        if await self.presence.closed(sub.table_id, player, stream):
            await self.report(sub.table_id, player, False)

    async def report(self, table_id: str, player: str, connected: bool) -> int:
        """Tell the table a player (dis)connected (also the presence sweeper's, when a lease
        expires or comes back); retried while the table service restarts, since a lost
        disconnect would never start the away rule (I-8). The table's seq after it (0: not
        told)."""
        request = table_pb2.SetPresenceRequest(
            table_id=table_id, player_id=player, connected=connected
        )
        for attempt in range(5):
            try:
                return int((await self.tables.presence(request)).seq)
            except grpc.aio.UsageError:
                # The channel is closed: this gateway is stopping. The stream's presence lease
                # runs out and a live gateway's sweeper reports the disconnect instead.
                return 0
            except ServiceError as err:
                if err.status != grpc.StatusCode.UNAVAILABLE or attempt == 4:
                    log.warning(
                        "presence report lost", extra={"table_id": table_id, "code": err.code}
                    )
                    return 0
            await asyncio.sleep(1.0 + attempt)
        return 0

    # -- watching (I-35) ---------------------------------------------------------------------

    async def watch(self, request: gateway_pb2.WatchRequest, caller: Caller, write: Write) -> None:
        """A read-only stream of a watchable table: the same events as the players get (the
        seed only in the match's end), with a spectator's view."""
        player = self.callers.player(caller, request)
        table_id = edge_bounds.table_id(request.table_id)
        seated = await self.may_watch(table_id, player)

        async def fresh() -> table_pb2.TableView:
            return await self._spectator_view(table_id)

        async def pushed(update: table_pb2.TableUpdate) -> table_pb2.TableView:
            # Seat 0's side at the turn's start is in neither seat's pushed view while seat 0
            # moves: one read per commit, shared by this gateway's watchers of the table.
            return await self.spectators.view(table_id, update.seq)

        self.spectators.watch(table_id)
        sub = await self.feed.subscribe(table_id)
        try:
            view = await fresh()
            backlog = await self.feed.events_between(table_id, request.from_seq, view.seq)
        except (ServiceError, RedisError) as exc:
            self.spectators.unwatch(table_id)
            await self.feed.unsubscribe(sub)
            raise infrastructure_failure(exc) or cast(ServiceError, exc) from None
        queue: Queue = asyncio.Queue(maxsize=1000)
        await queue.put(
            play_update(table_id, gateway_pb2.SeatUpdate(seq=view.seq, events=backlog, view=view))
        )
        relay = asyncio.create_task(relay_updates(self.feed, sub, view.seq, queue, fresh, pushed))
        # A player watching their own table reads what players read: no kibitz before the end.
        listener = Listener(table_id, player, seated, partial(_offer, queue))
        self.chat.listen(listener)
        try:
            while (update := await queue.get()) is not None:
                await write(update)
        finally:
            self.chat.unlisten(listener)
            relay.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await relay
            self.spectators.unwatch(table_id)
            await self.feed.unsubscribe(sub)

    async def may_watch(self, table_id: str, player: str) -> bool:
        """PERMISSION_DENIED NOT_WATCHABLE unless `player` sits at the table or anyone may
        watch it (I-35, with the players' opt-out); whether `player` sits there."""
        asked = matchmaking_pb2.TableRequest(player_id=player, table_id=table_id)
        lobby = await self.lobby.get_table(asked)
        seated = player in lobby.player_ids
        if not seated and not (
            lobby.watchable and not await self.privacy.any_hidden(list(lobby.player_ids))
        ):
            raise PermissionDenied("NOT_WATCHABLE", "this table is not open to spectators")
        return seated

    async def _spectator_view(self, table_id: str) -> table_pb2.TableView:
        return await self.tables.view(table_pb2.GetViewRequest(table_id=table_id, spectator=True))


async def _drained(
    requests: AsyncIterator[gateway_pb2.PlayRequest],
    quiet_s: float = DRAIN_QUIET_S,
    most_s: float = DRAIN_MOST_S,
) -> None:
    """Before a Play stream is refused as it opens: read what the client already sent (its
    join, the command it sent straight after) until it goes quiet for `quiet_s`, at most
    `most_s`. A client's message still on its way when the refusal arrives fails in its own
    gRPC, which then reports INTERNAL "Internal error from Core" instead of the refusal's code
    (grpc/grpc#36066, Python asyncio clients): a forged token came back INTERNAL in about one
    stream of two hundred opened at once, and a client retries INTERNAL as a server fault
    instead of renewing its token."""
    loop = asyncio.get_running_loop()
    until = loop.time() + most_s
    with contextlib.suppress(StopAsyncIteration, TimeoutError, grpc.RpcError):
        while (left := until - loop.time()) > 0:
            await asyncio.wait_for(anext(requests), min(quiet_s, left))


def _offer(queue: Queue, update: gateway_pb2.PlayUpdate) -> None:
    """A chat message to a stream: dropped for a stream 1,000 messages behind (GetChat has it)."""
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(update)


def _view_of(update: table_pb2.TableUpdate, player: str, seat: int) -> table_pb2.TableView | None:
    """The caller's own view: the one whose seat holds this player (the seat it joined with,
    unless a new match seated the players otherwise); None once they no longer sit there.
    Never another player's view."""
    view = update.views[seat]
    if view.player_ids[seat] == player:
        return view
    return next((v for v in update.views if v.player_ids[v.seat] == player), None)
