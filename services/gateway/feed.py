"""One subscription per table per gateway process, fanned out to the local Play streams, and the
order in which a stream sees its table's updates and its own commands' answers.

An update reaches a seat one way (issue 62, item 2): each commit publishes its `TableUpdate`
(its events and both seats' fresh views) on the table's channel (services/contracts/
redis_keys.py), and the command's reply carries its result only (the seq it committed). The
gateway holds one Redis pub/sub connection; the first local stream on a table subscribes to its
channel, the last one to leave unsubscribes. Each message is parsed once and handed to every
local subscriber (both seats, spectators). What a stream missed (a gap in seqs, a join's
backlog, a broken connection: `GAP`) is read from the table's stream by seq
(services/gateway/seat_relay.py).

While a stream's command is out (`busy`), the table's updates skip that stream (`missed`), and
the command's answer goes with the first update that shows its commit (`Answer(message,
update)`: come already, or still to come); the events it skipped are filled from the table's
stream by seq. So a result always meets its commit. A refusal goes alone, after the last update
if the stream skipped one.

Pub/sub delivers at most once: after the connection breaks, every subscriber is told to fill
the gap from the table's stream (`GAP`), and an answer waiting for its update goes alone; an
answer whose update has not come within ANSWER_WAIT_S does the same for its stream.

It replaced three ways (the reply's copy of the update to the commanding gateway, pub/sub's to
the others, the table's stream for gaps) and their bookkeeping (a 250 ms hold of pub/sub's copy
for the answer: `answers_due`, `LATE`): the same cost on the command-path bench and in the
4,000-table soak (docs/benchmarks.md, "One way for an update to reach a seat").

Beside each table's update channel the feed listens on its seat channel: a Play stream opening
anywhere (`take_seat`) is handed to `on_seat`, which ends that player's older streams here; and
on its chat channel, whose messages go to `on_chat` (services/gateway/chat_delivery.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from redis.exceptions import RedisError

from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2
from bg.table.v1 import table_pb2
from services.common.connections import reply_text
from services.common.pubsub_pulse import Pulse
from services.contracts.redis_keys import (
    chat_channel,
    seat_channel,
    stream_entries,
    stream_key,
    table_of_channel,
    update_channel,
)

log = logging.getLogger("bg.gateway.feed")

GAP: Final = None  # queued to a subscriber when updates may have been lost
# How long an answer waits for the update that shows its commit (normally a few ms): past it
# the stream refills from a fresh view and the answer follows on its own. Without a bound, an
# update pub/sub lost (a subscription not yet in force on its node) would hold the answer until
# the table's next commit: up to a turn clock's 46.5 s.
ANSWER_WAIT_S = 1.0
QUEUE_LIMIT = 1000


async def read_events(
    redis: Any, table_id: str, after_seq: int, upto_seq: int | None = None, count: int = 1000
) -> list[tuple[int, bytes]]:
    """A table's serialized events (its stream) with after_seq < seq <= upto_seq (all after,
    when None), in order."""
    out: list[tuple[int, bytes]] = []
    low = after_seq
    while True:
        high = "+" if upto_seq is None else f"{upto_seq}-0"
        entries = await redis.xrange(stream_key(table_id), min=f"({low}-0", max=high, count=count)
        out += stream_entries(entries)
        if len(entries) < count:
            return out
        low = out[-1][0]


@dataclass(frozen=True, slots=True)
class Answer:
    """The answer to one of the stream's commands (a result or an error), queued in order with
    the table's updates; `update` is the commit it produced, when the table sent it back."""

    message: gateway_pb2.PlayUpdate
    update: table_pb2.TableUpdate | None = None


Item = table_pb2.TableUpdate | Answer | None


class Subscription:
    """A local stream's view of a table's updates (and of the answers to its own commands)."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        self.busy = False  # a command of this stream is out: updates wait for its answer
        self.missed = False  # an update skipped it while busy

    def deliver(self, item: Item) -> None:
        if item is not None and self.queue.qsize() >= QUEUE_LIMIT:
            # A stream this far behind resynchronises from the stream instead of buffering more
            # updates; the answers to its commands are kept (each command gets one).
            kept = [a for a in _drain(self.queue) if isinstance(a, Answer)]
            self.queue.put_nowait(GAP)
            for answer in kept:
                self.queue.put_nowait(answer if answer.update is None else Answer(answer.message))
            if not isinstance(item, Answer):
                return
            item = Answer(item.message)
        self.queue.put_nowait(item)

    async def next(
        self,
    ) -> tuple[list[table_pb2.TableUpdate | None], gateway_pb2.PlayUpdate | None]:
        """What the stream writes next: an update (GAP: refill), or an answer with the update
        that shows its commit when that came with it."""
        item = await self.queue.get()
        if isinstance(item, Answer):
            return ([item.update] if item.update is not None else []), item.message
        return [item], None


class _Table:
    """A table's side on this gateway: its last update, and the answers of local streams
    waiting for the update that shows their commit."""

    def __init__(self) -> None:
        self.last: table_pb2.TableUpdate | None = None
        self.answers: dict[Subscription, tuple[int, gateway_pb2.PlayUpdate]] = {}


def _drain(queue: asyncio.Queue[Item]) -> list[Item]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


SeatTaken = Callable[[str, str, str], None]  # (table, player, the stream that took the seat)


ChatSaid = Callable[[str, bytes], None]  # (table, a serialized ChatMessage)


def _channels(table_id: str) -> tuple[str, str, str]:
    return update_channel(table_id), seat_channel(table_id), chat_channel(table_id)


class TableFeed:
    def __init__(
        self,
        redis: Any,
        retry_s: float = 0.5,
        on_seat: SeatTaken = lambda *taken: None,
        on_chat: ChatSaid = lambda *said: None,
    ) -> None:
        self.redis = redis
        self.retry_s = retry_s
        self.on_seat = on_seat
        self.on_chat = on_chat
        self.subscribers: dict[str, set[Subscription]] = {}
        self._tables: dict[str, _Table] = {}
        self._pubsub: Any = None
        self._watched: Any = None  # the pub/sub connection whose reconnects ask for refills
        self._reader: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self.received = 0

    async def subscribe(self, table_id: str) -> Subscription:
        sub = Subscription(table_id)
        async with self._lock:
            subs = self.subscribers.setdefault(table_id, set())
            subs.add(sub)
            self._tables.setdefault(table_id, _Table())
            if len(subs) == 1:
                try:
                    await self.redis.initialize()  # a cluster client learns its nodes first
                    await self._channel().subscribe(*_channels(table_id))
                    self._watch()
                except (RedisError, OSError) as exc:  # the reader reconnects and resubscribes
                    log.warning("table feed down at subscribe", extra={"error": repr(exc)})
            self._wake.set()
            if self._reader is None or self._reader.done():
                self._reader = asyncio.create_task(self._read(), name="table-feed")
        return sub

    def answer(
        self, table_id: str, seq: int, origin: Subscription, answer: gateway_pb2.PlayUpdate
    ) -> None:
        """The answer to `origin`'s command, whose commit is `seq`: with the first update that
        shows it, come already or still to come."""
        table = self._tables.get(table_id)
        if table is None:
            self.alone(table_id, origin, answer)
        elif table.last is not None and table.last.seq >= seq:
            origin.busy = origin.missed = False
            origin.deliver(Answer(answer, table.last))  # what it missed: filled from the stream
        else:
            table.answers[origin] = (seq, answer)
            loop = asyncio.get_running_loop()
            loop.call_later(ANSWER_WAIT_S, self._overdue, table_id, origin, seq)

    def _overdue(self, table_id: str, origin: Subscription, seq: int) -> None:
        """The update of `origin`'s commit `seq` did not come (pub/sub is at most once: a
        subscription not yet in force when the commit rang, a cluster node's loss): the stream
        refills from a fresh view, which shows the commit, and the answer goes after it."""
        table = self._tables.get(table_id)
        waiting = None if table is None else table.answers.get(origin)
        if table is None or waiting is None or waiting[0] != seq:
            return
        del table.answers[origin]
        origin.busy = origin.missed = False
        origin.deliver(GAP)
        origin.deliver(Answer(waiting[1]))

    def alone(self, table_id: str, origin: Subscription, answer: gateway_pb2.PlayUpdate) -> None:
        """An answer with no commit of its own (a refusal, a duplicate): after the last update,
        if the stream skipped one while its command was out."""
        table = self._tables.get(table_id)
        if origin.missed and table is not None and table.last is not None:
            origin.deliver(table.last)
        origin.busy = origin.missed = False
        origin.deliver(Answer(answer))

    def ring(self, update: table_pb2.TableUpdate) -> None:
        """A commit's update, from the table's channel: to every local stream, except one whose
        command is out (it goes with that command's answer)."""
        table = self._tables.get(update.table_id)
        if table is None:
            return
        if table.last is None or update.seq > table.last.seq:
            table.last = update
        for sub in self.subscribers.get(update.table_id, ()):
            waiting = table.answers.get(sub)
            if waiting is not None and waiting[0] <= update.seq:
                del table.answers[sub]
                sub.busy = sub.missed = False
                sub.deliver(Answer(waiting[1], update))
            elif sub.busy:
                sub.missed = True
            else:
                sub.deliver(update)

    def _refill(self, table_id: str) -> None:
        """The table's updates may have been lost: its streams refill from its stream, and an
        answer waiting for its update goes alone after that."""
        table = self._tables.get(table_id)
        for sub in self.subscribers.get(table_id, ()):
            sub.deliver(GAP)
        if table is not None:
            for sub, (_, answer) in table.answers.items():
                sub.busy = sub.missed = False
                sub.deliver(Answer(answer))
            table.answers.clear()

    async def events_between(
        self, table_id: str, after_seq: int, upto_seq: int
    ) -> list[events_pb2.TableEvent]:
        """The table's events with after_seq < seq <= upto_seq, from its stream (the durable
        record): a joining stream's backlog, or a gap the live updates left."""
        if after_seq >= upto_seq:
            return []
        out = []
        for _seq, data in await read_events(self.redis, table_id, after_seq, upto_seq):
            event = events_pb2.TableEvent()
            event.ParseFromString(data)
            out.append(event)
        return out

    async def last_seq(self, table_id: str) -> int | None:
        """The seq of the table's last event (None: the table has no stream), one read: a
        refill of a table that did not move since needs no view (after a broken feed, most)."""
        entries = await self.redis.xrevrange(stream_key(table_id), count=1)
        found = stream_entries(entries)
        return found[0][0] if found else None

    async def take_seat(self, table_id: str, player_id: str, stream: str) -> None:
        """A Play stream of `player_id` opened: their other streams to the table end, on every
        gateway (at most once, as pub/sub is: a lost notice leaves two streams on one seat,
        which the seq check keeps consistent)."""
        await self.redis.publish(seat_channel(table_id), f"{player_id} {stream}")

    async def unsubscribe(self, sub: Subscription) -> None:
        async with self._lock:
            subs = self.subscribers.get(sub.table_id)
            if subs is None:
                return
            subs.discard(sub)
            table = self._tables.get(sub.table_id)
            if table is not None:
                table.answers.pop(sub, None)
            if not subs:
                del self.subscribers[sub.table_id]
                self._tables.pop(sub.table_id, None)
                with contextlib.suppress(Exception):  # a broken connection forgets it anyway
                    await self._channel().unsubscribe(*_channels(sub.table_id))

    def _channel(self) -> Any:
        if self._pubsub is None:
            self._pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        return self._pubsub

    async def _read(self) -> None:
        pulse = Pulse()  # a frozen or cut-off node would leave the feed silent, not broken
        while True:
            if not self.subscribers:
                self._wake.clear()
                await self._wake.wait()
                pulse.heard()
                continue
            try:
                message = await self._channel().get_message(timeout=1.0)
                if message is not None:
                    pulse.heard()
                await pulse.beat(self._channel())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("table feed broke; resubscribing", extra={"error": repr(exc)})
                await self._reconnect()
                pulse.heard()
                continue
            if message is None or message.get("type") != "message":
                continue
            channel = reply_text(message["channel"])
            table_id = table_of_channel(channel)
            if channel.endswith(":seat"):  # a seat taken, not a commit
                if table_id in self.subscribers:
                    player, _, stream = reply_text(message["data"]).partition(" ")
                    self.on_seat(table_id, player, stream)
                continue
            if channel.endswith(":chat"):  # a chat message (services/gateway/chat_delivery.py)
                if table_id in self.subscribers:
                    self.on_chat(table_id, message["data"])
                continue
            self.received += 1
            if table_id not in self.subscribers:
                continue
            update = table_pb2.TableUpdate()
            update.ParseFromString(message["data"])
            self.ring(update)

    def _watch(self) -> None:
        """redis-py's pub/sub, when its connection breaks, connects again and subscribes again
        by itself (the client's retry policy, services/common/connections.py): what was published
        meanwhile is lost with no error to see, and a seat waited for an update that never came.
        So every reconnect of the connection asks every stream to refill from the table's
        stream, as a broken feed does."""
        connection = getattr(self._pubsub, "connection", None)
        if connection is not None and connection is not self._watched:
            connection.register_connect_callback(self._reconnected)  # held weakly: a method
            self._watched = connection

    def _reconnected(self, connection: Any) -> None:
        log.warning("table feed reconnected; streams refill from the tables' streams")
        self._refill_all()

    def _refill_all(self) -> None:
        """Anything published while the subscription was away is in the tables' streams."""
        for table_id in list(self.subscribers):
            self._refill(table_id)

    async def _reconnect(self) -> None:
        async with self._lock:
            old, self._pubsub = self._pubsub, None
            if old is not None:
                with contextlib.suppress(Exception):
                    await old.aclose()
            await asyncio.sleep(self.retry_s)
            channels = [c for t in self.subscribers for c in _channels(t)]
            try:
                if channels:
                    await self.redis.initialize()
                    await self._channel().subscribe(*channels)
                    self._watch()
            except Exception as exc:
                log.warning("table feed still down", extra={"error": repr(exc)})
            self._refill_all()

    async def close(self) -> None:
        self.subscribers.clear()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
            self._pubsub = None
