"""The gateway's API over WebSocket for browsers: the same messages in the protobuf JSON mapping.

One envelope for everything (docs/protocol.md, "WebSocket"). Client -> gateway, one JSON object
per message, each with an `id` of the client's choosing (a number, or a string of at most 64
characters):
  {"id": 1, "method": "Login", "request": {"guestName": "ann"}}
  {"id": 2, "method": "CreateTable", "request": {...}, "token": "<token>"}   (token once is enough)
  {"id": 3, "method": "Play", "request": {"join": {"tableId": "...", "fromSeq": "0"}}}
  {"id": 4, "method": "Play", "tableId": "...", "request": {"command": {"commandId": "c1", ...}}}
  {"id": 5, "method": "Watch", "request": {"tableId": "...", "fromSeq": "0"}}   (read-only, I-35)
  {"id": 6, "method": "Friends", "request": {}}   (one per connection: answered with a FriendsView)
  {"id": 7, "method": "EndStream", "request": {"tableId": "..."}}   (done with a table: its Play or
      Watch stream on this connection ends, as a cancelled gRPC call does; {"ended": true|false})
Gateway -> client: every request gets exactly one answer carrying its id,
  {"id": 1, "response": {...}}   or   {"id": 1, "error": {"status": "...", "code": "...", ...}}
(a join's or a Watch's response is a `Joined`: the stream is open, at which seq; a command's is
its CommandResult, its refusal an error with `commandId` and `requestNo`), and the streams push
  {"push": "update", "update": {"tableId": "...", "update": {SeatUpdate}}}
  {"push": "chat", "tableId": "...", "chat": {ChatMessage}}   (what the stream's reader may read)
  {"push": "ended", "tableId": "...", "error": {...}}   (the server ended the stream; error if why)
  {"push": "friends", "friends": {FriendsView}}   (the Friends stream: the view changed)
  {"push": "ended", "stream": "Friends", "error": {...}}
`id` is null only on the answer to a message whose id could not be read (not JSON, say).
Every call and stream runs the very handlers the gRPC servicer calls
(services/gateway/handlers.py), with the connection as the `Caller`, so authentication, seat
checks and rate limits are the same; a refusal is the handler's ServiceError, answered here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from websockets.exceptions import ConnectionClosed

from bg.analysis.v1 import analysis_pb2
from bg.common.v1 import errors_pb2
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common import json_envelope
from services.common.errors import ServiceError, infrastructure_failure
from services.common.json_envelope import RequestId
from services.gateway.callers import Caller
from services.gateway.handlers import GatewayHandlers

log = logging.getLogger("bg.gateway.ws")
MAX_STREAMS = 8  # Play streams one connection may hold (and as many Watch streams)
MAX_MESSAGE = 64 * 1024  # bytes in one client message
Send = Callable[[dict[str, Any]], Awaitable[None]]

UNARY: dict[str, Any] = {
    "Login": gateway_pb2.LoginRequest,
    "Refresh": gateway_pb2.RefreshRequest,
    "Logout": gateway_pb2.LogoutRequest,
    "LinkEmail": gateway_pb2.LinkEmailRequest,
    "DeleteAccount": gateway_pb2.DeleteAccountRequest,
    "SetDisplayName": gateway_pb2.SetDisplayNameRequest,
    "CreateTable": matchmaking_pb2.CreateTableRequest,
    "ListTables": matchmaking_pb2.ListTablesRequest,
    "JoinByCode": matchmaking_pb2.JoinByCodeRequest,
    "QuickMatch": matchmaking_pb2.QuickMatchRequest,
    "StartTable": matchmaking_pb2.TableRequest,
    "LeaveTable": matchmaking_pb2.TableRequest,
    "GetTable": matchmaking_pb2.TableRequest,
    "GetView": gateway_pb2.ViewRequest,
    "GetMatchRecord": table_pb2.GetMatchRecordRequest,
    "GetBalance": gateway_pb2.BalanceRequest,
    "GetNames": gateway_pb2.NamesRequest,
    "GetHint": gateway_pb2.HintRequest,
    "GetAnalysis": analysis_pb2.GetAnalysisRequest,
    "SendChat": gateway_pb2.SendChatRequest,
    "GetChat": gateway_pb2.GetChatRequest,
    "MuteChat": gateway_pb2.MuteChatRequest,
    "ReportChat": gateway_pb2.ReportChatRequest,
    "ListTournaments": matchmaking_pb2.ListTournamentsRequest,
    "GetTournament": matchmaking_pb2.TournamentRequest,
    "RegisterTournament": matchmaking_pb2.TournamentRequest,
    "UnregisterTournament": matchmaking_pb2.TournamentRequest,
    "Follow": gateway_pb2.FollowRequest,
    "Block": gateway_pb2.BlockRequest,
    "GetFriends": gateway_pb2.GetFriendsRequest,
    "Challenge": gateway_pb2.ChallengeRequest,
    "AnswerChallenge": gateway_pb2.AnswerChallengeRequest,
    "ExportMatch": gateway_pb2.ExportMatchRequest,
    "SetPreferences": gateway_pb2.PreferencesRequest,
    "SetPrivacy": gateway_pb2.PrivacyRequest,
    "GetLeaderboard": leaderboard_pb2.TopRequest,
    "GetRank": leaderboard_pb2.RankRequest,
    "GetProfile": leaderboard_pb2.ProfileRequest,
    "GetMatchHistory": leaderboard_pb2.HistoryRequest,
    "GetArchivedMatch": leaderboard_pb2.ArchivedMatchRequest,
    "GetMatchChanges": leaderboard_pb2.ChangesRequest,
    "GetErrorTrend": analysis_pb2.PlayerTrendRequest,
}


def to_json(message: Message) -> dict[str, Any]:
    """The protobuf JSON mapping with every field, defaults included (a seat 0 or a zero balance
    is there, not missing); 64-bit integers are strings and enums their full names, as the
    mapping has them (docs/protocol.md shows each)."""
    return dict(json_format.MessageToDict(message, always_print_fields_with_no_presence=True))


def error_json(status: str, error: errors_pb2.Error, **extra: Any) -> dict[str, Any]:
    """Every error's one shape: the gRPC status name and the typed Error's fields."""
    return {"status": status, **to_json(error), **extra}


def _error(status: grpc.StatusCode, code: str, message: str, field: str = "") -> dict[str, Any]:
    return error_json(status.name, errors_pb2.Error(code=code, message=message[:200], field=field))


def refusal(exc: Exception) -> dict[str, Any] | None:
    """A handler's refusal as an answer's error (a store or network failure as the retryable
    UNAVAILABLE it is, as gRPC's `grpc_errors` has it), or None for a bug."""
    err = exc if isinstance(exc, ServiceError) else infrastructure_failure(exc)
    return None if err is None else error_json(err.status.name, err.to_proto())


def writer(stream: StreamAnswers | FriendsPushes) -> Callable[[Any], Awaitable[None]]:
    """Where a stream's handler writes (a PlayUpdate, or a Friends stream's view): a socket
    gone ends the handler, as a gRPC call's cancellation does."""

    async def write(update: Any) -> None:
        try:
            await stream.write(update)
        except ConnectionClosed:
            raise asyncio.CancelledError from None

    return write


class StreamAnswers:
    """One Play or Watch stream on a connection: turns what the handler writes into answers
    carrying the ids of the requests they answer, and pushes.

    The handler answers a stream's commands one by one in the order sent, each with its
    `request_no` (the join is 0): the n-th command sent here is answered with the id it came
    with. Every command gets its answer, the stream's end included (STREAM_ENDED)."""

    def __init__(self, send: Send, table_id: str, open_id: RequestId, spectator: bool) -> None:
        self.send = send
        self.table_id = table_id
        self.open_id = open_id
        self.spectator = spectator
        self.joined = False
        self.ended = False
        self._sent = 0
        self._waiting: dict[int, RequestId] = {}  # request_no -> the client's id

    def command(self, request_id: RequestId) -> bool:
        """A command goes to the stream: remember the id its answer carries (False: the stream
        has ended, the command is not sent)."""
        if self.ended:
            return False
        self._sent += 1
        self._waiting[self._sent] = request_id
        return True

    async def write(self, update: gateway_pb2.PlayUpdate) -> None:
        kind = update.WhichOneof("kind")
        if kind == "update":
            if not self.joined:
                self.joined = True
                joined = gateway_pb2.Joined(
                    table_id=self.table_id, seq=update.update.seq, spectator=self.spectator
                )
                await self.send({"id": self.open_id, "response": to_json(joined)})
            await self.send({"push": "update", "update": to_json(update)})
            if update.update.HasField("result"):  # the join asked for results in updates
                await self._answered(update.update.result)
        elif kind == "result":
            await self._answered(update.result)
        elif kind == "chat":
            await self.send(
                {"push": "chat", "tableId": self.table_id, "chat": to_json(update.chat)}
            )
        elif kind == "error":
            failed = update.error
            if failed.request_no == 0:  # not an answer: the stream ends (a ban)
                await self.end(error_json(failed.status or "ABORTED", failed.error))
                return
            error = error_json(
                failed.status or "FAILED_PRECONDITION",
                failed.error,
                commandId=failed.command_id,
                requestNo=str(failed.request_no),
            )
            await self.send({"id": self._waiting.pop(failed.request_no, None), "error": error})

    async def _answered(self, result: gateway_pb2.CommandResult) -> None:
        request_id = self._waiting.pop(result.request_no, None)
        await self.send({"id": request_id, "response": to_json(result)})

    async def refuse(self, error: dict[str, Any]) -> None:
        """The stream could not open: the join's (or Watch's) answer."""
        self.ended = True
        await self.send({"id": self.open_id, "error": error})

    async def end(self, error: dict[str, Any] | None = None) -> None:
        """The server ended the stream: commands still unanswered get STREAM_ENDED (they may or
        may not have been applied: sent again with the same command id on a new stream, each
        applies at most once), then the push that says so."""
        if self.ended:
            return
        self.ended = True
        if not self.joined:
            await self.refuse(error or _error(grpc.StatusCode.UNAVAILABLE, "STREAM_ENDED", "ended"))
            return
        for request_no, request_id in sorted(self._waiting.items()):
            gone = _error(
                grpc.StatusCode.UNAVAILABLE,
                "STREAM_ENDED",
                "the stream ended before this command was answered; join again and send it "
                "again with the same command id",
            )
            await self.send({"id": request_id, "error": gone | {"requestNo": str(request_no)}})
        self._waiting.clear()
        push: dict[str, Any] = {"push": "ended", "tableId": self.table_id}
        if error is not None:
            push["error"] = error
        await self.send(push)


class FriendsPushes:
    """A connection's Friends stream: its first view answers the request, the next ones are
    pushes; its end (a ban, Redis away) is the `ended` push."""

    def __init__(self, send: Send, open_id: RequestId) -> None:
        self.send = send
        self.open_id = open_id
        self.answered = False

    async def write(self, view: gateway_pb2.FriendsView) -> None:
        if not self.answered:
            self.answered = True
            await self.send({"id": self.open_id, "response": to_json(view)})
        else:
            await self.send({"push": "friends", "friends": to_json(view)})

    async def end(self, error: dict[str, Any] | None = None) -> None:
        if not self.answered:
            self.answered = True
            gone = error or _error(grpc.StatusCode.UNAVAILABLE, "STREAM_ENDED", "ended")
            await self.send({"id": self.open_id, "error": gone})
            return
        push: dict[str, Any] = {"push": "ended", "stream": "Friends"}
        if error is not None:
            push["error"] = error
        await self.send(push)


_Streams = dict[
    str, tuple[asyncio.Queue[gateway_pb2.PlayRequest | None], StreamAnswers, asyncio.Task[None]]
]


class WsGateway:
    def __init__(self, handlers: GatewayHandlers) -> None:
        self.handlers = handlers
        self.metrics = handlers.metrics

    async def handle(self, connection: Any) -> None:
        token = ""
        remote = getattr(connection, "remote_address", None) or ("local", 0)
        conn_id = f"ipv4:{remote[0]}:{remote[1]}"  # a gRPC-style peer: limits count per address
        sending = asyncio.Lock()

        async def send(reply: dict[str, Any]) -> None:
            async with sending:  # one stream's answer and push never interleave with another's
                await connection.send(json.dumps(reply))

        streams: _Streams = {}
        watching: dict[str, tuple[StreamAnswers, asyncio.Task[None]]] = {}
        friends: list[asyncio.Task[None]] = []  # at most one live Friends stream
        self.metrics.ws_connections.inc()
        try:
            async for raw in connection:
                message = json_envelope.parsed(raw)
                if message is None:
                    await send({"id": None, "error": _malformed("not a JSON object")})
                    continue
                request_id = json_envelope.request_id(message)
                method = message.get("method")
                if not isinstance(method, str):
                    await send({"id": request_id, "error": _malformed("no method", "method")})
                    continue
                token = json_envelope.token_of(message, token)
                caller = Caller(conn_id, token or None, transport="ws")
                if method == "Play":
                    await self._play_message(send, message, caller, streams, watching)
                elif method == "Watch":
                    await self._watch_message(send, message, caller, watching)
                elif method == "Friends":
                    await self._friends_message(send, message, caller, friends)
                elif method == "EndStream":
                    await send(await self._end_stream(message, streams, watching))
                else:
                    await send(await self._unary(method, message, caller))
        except ConnectionClosed as gone:
            # A client dropping without a close frame is an ordinary goodbye, not an error.
            log.debug("websocket closed", extra={"code": gone.rcvd.code if gone.rcvd else None})
        finally:
            self.metrics.ws_connections.dec()  # first: the awaits below may be cancelled
            for queue, _, task in streams.values():
                await queue.put(None)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            for task in [t for _, t in watching.values()] + friends:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _play_message(
        self,
        send: Send,
        message: dict[str, Any],
        caller: Caller,
        streams: _Streams,
        watching: dict[str, tuple[StreamAnswers, asyncio.Task[None]]],
    ) -> None:
        request_id = json_envelope.request_id(message)
        try:
            request = json_format.ParseDict(message.get("request", {}), gateway_pb2.PlayRequest())
        except (json_format.ParseError, RecursionError, TypeError) as exc:
            await send({"id": request_id, "error": _malformed(str(exc), "request")})
            return
        for done in [t for t, (_, answers, task) in streams.items() if task.done()]:
            del streams[done]
        if request.WhichOneof("kind") == "join":
            table_id = request.join.table_id
            if table_id in streams:
                error = _error(
                    grpc.StatusCode.ALREADY_EXISTS,
                    "ALREADY_JOINED",
                    f"table {table_id[:64]!r} is joined on this connection",
                    "join",
                )
            elif len(streams) >= MAX_STREAMS:
                error = _error(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "TOO_MANY_STREAMS",
                    f"at most {MAX_STREAMS} Play streams on one connection",
                )
            else:
                # Bounded: a client sending faster than its commands are answered waits here,
                # and so does the reading of its socket (backpressure, not memory).
                queue: asyncio.Queue[gateway_pb2.PlayRequest | None] = asyncio.Queue(64)
                await queue.put(request)
                answers = StreamAnswers(send, table_id, request_id, spectator=False)
                task = asyncio.create_task(self._play(queue, caller, answers))
                streams[table_id] = (queue, answers, task)
                return
            await send({"id": request_id, "error": error})
            return
        table_id = str(message.get("tableId") or "")
        if not table_id and len(streams) == 1:
            table_id = next(iter(streams))
        if table_id and table_id in watching:
            error = _error(
                grpc.StatusCode.PERMISSION_DENIED,
                "WATCHING_ONLY",
                "this connection watches the table: a spectator sends no commands",
                "tableId",
            )
            await send({"id": request_id, "error": error})
            return
        if table_id not in streams:
            code = "NOT_JOINED" if table_id else "NAME_THE_TABLE"
            text = "join the table first" if table_id else "name the table: tableId"
            await send(
                {
                    "id": request_id,
                    "error": _error(grpc.StatusCode.FAILED_PRECONDITION, code, text, "tableId"),
                }
            )
            return
        queue, answers, _ = streams[table_id]
        if not answers.command(request_id):
            await send(
                {
                    "id": request_id,
                    "error": _error(
                        grpc.StatusCode.UNAVAILABLE,
                        "STREAM_ENDED",
                        "the stream has ended; join again",
                        "tableId",
                    ),
                }
            )
            return
        await queue.put(request)

    async def _watch_message(
        self,
        send: Send,
        message: dict[str, Any],
        caller: Caller,
        watching: dict[str, tuple[StreamAnswers, asyncio.Task[None]]],
    ) -> None:
        """A read-only stream (I-35): its updates come like Play's; commands are refused."""
        request_id = json_envelope.request_id(message)
        try:
            request = json_format.ParseDict(message.get("request", {}), gateway_pb2.WatchRequest())
        except (json_format.ParseError, RecursionError, TypeError) as exc:
            await send({"id": request_id, "error": _malformed(str(exc), "request")})
            return
        for done in [t for t, (_, task) in watching.items() if task.done()]:
            del watching[done]
        if request.table_id in watching:
            error = _error(
                grpc.StatusCode.ALREADY_EXISTS,
                "ALREADY_WATCHING",
                "this connection already watches the table",
                "tableId",
            )
        elif len(watching) >= MAX_STREAMS:
            error = _error(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "TOO_MANY_STREAMS",
                f"at most {MAX_STREAMS} Watch streams on one connection",
            )
        else:
            answers = StreamAnswers(send, request.table_id, request_id, spectator=True)
            run = self.handlers.Watch(request, caller, writer(answers))
            task = asyncio.create_task(self._stream(run, answers))
            watching[request.table_id] = (answers, task)
            return
        await send({"id": request_id, "error": error})

    async def _friends_message(
        self,
        send: Send,
        message: dict[str, Any],
        caller: Caller,
        friends: list[asyncio.Task[None]],
    ) -> None:
        """The Friends stream: the caller's FriendsView, then a push whenever it changes."""
        request_id = json_envelope.request_id(message)
        friends[:] = [task for task in friends if not task.done()]
        if friends:
            error = _error(
                grpc.StatusCode.ALREADY_EXISTS,
                "ALREADY_OPEN",
                "this connection has its Friends stream open",
            )
            await send({"id": request_id, "error": error})
            return
        pushes = FriendsPushes(send, request_id)
        run = self.handlers.Friends(gateway_pb2.GetFriendsRequest(), caller, writer(pushes))
        friends.append(asyncio.create_task(self._stream(run, pushes)))

    @staticmethod
    async def _end_stream(
        message: dict[str, Any],
        streams: _Streams,
        watching: dict[str, tuple[StreamAnswers, asyncio.Task[None]]],
    ) -> dict[str, Any]:
        """The client is done with a table (back to the lobby): its Play or Watch stream there
        ends as a cancelled gRPC call does, and the player's presence at the table with it (a
        friend sees them in the lobby, not in a match they left). Answers whether one was open."""
        request_id = json_envelope.request_id(message)
        request = message.get("request")
        table_id = request.get("tableId") if isinstance(request, dict) else None
        if not isinstance(table_id, str) or not table_id:
            return {"id": request_id, "error": _malformed("name the table: tableId", "tableId")}
        tasks = []
        if (play := streams.pop(table_id, None)) is not None:
            _, answers, task = play
            answers.ended = True  # the client asked: no STREAM_ENDED push follows
            tasks.append(task)
        if (watch := watching.pop(table_id, None)) is not None:
            watch[0].ended = True
            tasks.append(watch[1])
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        return {"id": request_id, "response": {"ended": bool(tasks)}}

    async def _play(
        self,
        queue: asyncio.Queue[gateway_pb2.PlayRequest | None],
        caller: Caller,
        answers: StreamAnswers,
    ) -> None:
        async def requests() -> AsyncIterator[gateway_pb2.PlayRequest]:
            while (item := await queue.get()) is not None:
                yield item

        await self._stream(self.handlers.Play(requests(), caller, writer(answers)), answers)

    @staticmethod
    async def _stream(run: Awaitable[None], answers: StreamAnswers | FriendsPushes) -> None:
        """Run a stream's handler; its end, however it ends, is answered (a bug too: as
        INTERNAL, logged, so the client is never left waiting)."""
        try:
            await run
        except Exception as exc:
            error = refusal(exc)
            if error is None:
                log.exception("a stream's handler failed")
                error = _error(grpc.StatusCode.INTERNAL, "INTERNAL", "the stream failed")
            with contextlib.suppress(ConnectionClosed):
                await answers.end(error)
            return
        with contextlib.suppress(ConnectionClosed):
            await answers.end()

    async def _unary(self, method: str, message: dict[str, Any], caller: Caller) -> dict[str, Any]:
        reply = await self._answer(method, message, caller)
        status = reply["error"]["status"] if "error" in reply else "OK"
        named = method if method in UNARY else "unknown"  # the labels stay bounded
        self.metrics.ws_calls.labels(named, status).inc()
        return reply

    async def _answer(self, method: str, message: dict[str, Any], caller: Caller) -> dict[str, Any]:
        reply: dict[str, Any] = {"id": json_envelope.request_id(message)}
        request_type = UNARY.get(method)
        if request_type is None:
            reply["error"] = _error(
                grpc.StatusCode.UNIMPLEMENTED,
                "UNKNOWN_METHOD",
                f"no method {method[:64]!r}",
                "method",
            )
            return reply
        try:
            request = json_format.ParseDict(message.get("request", {}), request_type())
        except (json_format.ParseError, RecursionError, TypeError) as exc:
            reply["error"] = _malformed(str(exc), "request")
            return reply
        try:
            response = await self.handlers.unary[method](request, caller)
            reply["response"] = to_json(response)
        except Exception as exc:
            error = refusal(exc)
            if error is None:  # a bug: answered, logged, and the connection goes on
                log.exception("a handler failed", extra={"method": method})
                error = _error(grpc.StatusCode.INTERNAL, "INTERNAL", "the call failed")
            reply["error"] = error
        return reply


def _malformed(message: str, field: str = "") -> dict[str, Any]:
    return _error(grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED", message, field)
