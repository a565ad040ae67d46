"""A Play or Watch stream's side of a table: its subscription's updates (and the answers to its
own commands) turned into the messages the stream writes, each event once and in order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import grpc
from redis.exceptions import RedisError

from bg.gateway.v1 import gateway_pb2
from bg.table.v1 import table_pb2
from services.common.backoff import Backoff
from services.common.errors import ServiceError
from services.gateway.feed import GAP, Subscription
from services.gateway.ports import EventSource

log = logging.getLogger("bg.gateway")
RESYNC_RETRY_S, RESYNC_RETRY_CAP_S = 0.5, 8.0  # a failed refill's next try, doubling
END = gateway_pb2.PlayUpdate()  # queued after a stream's last answer: the stream is over


class SeatGone(Exception):
    """The caller no longer sits at the table (a new match without them, or no table)."""


async def relay_updates(
    feed: EventSource,
    sub: Subscription,
    last: int,
    queue: asyncio.Queue[gateway_pb2.PlayUpdate | None],
    fresh: Callable[[], Awaitable[table_pb2.TableView]],
    pushed: Callable[[table_pb2.TableUpdate], Awaitable[table_pb2.TableView | None]],
    combine: bool = False,
) -> None:
    """A subscription's updates into `queue`, each event once and in order, gaps filled
    from the table's stream; `fresh()` reads the caller's view, `pushed(update)` takes it
    from an update (None: the caller no longer sits there, the stream is over). The answers
    to the stream's commands come in order with them (`Subscription.next`); with `combine`
    an accepted command's result rides on the update that shows it."""
    table_id = sub.table_id
    retry = Backoff(RESYNC_RETRY_S, RESYNC_RETRY_CAP_S)
    while True:
        updates, answer = await sub.next()  # in order: services/gateway/feed.py
        result = answer.result if answer is not None and answer.HasField("result") else None
        for update in updates:
            try:
                shown = await _seat_update(feed, table_id, last, update, fresh, pushed)
            except SeatGone:
                await queue.put(None)  # no longer seated here (or no table): stream over
                return
            except (ServiceError, RedisError) as exc:
                log.warning(
                    "cannot resync a stream",
                    extra={"table_id": table_id, "error": repr(exc)[:200]},
                )
                # Try again (the client's stream stays open), later each time: every stream of
                # a gateway whose feed broke refills at once, and fixed retries kept the table
                # replicas too busy to answer commands (the 4,000-table soak, 2026-12-06).
                sub.deliver(GAP)
                await asyncio.sleep(retry.failed())
                continue
            retry.reset()
            if shown is None:
                continue
            last = shown.seq
            if combine and result is not None and shown.seq >= result.seq:
                shown.result.CopyFrom(result)
                answer = None
            await queue.put(play_update(table_id, shown))
        if answer is END:
            await queue.put(None)  # the client closed its side: end the stream
            return
        if answer is not None:
            await queue.put(answer)


async def _seat_update(
    feed: EventSource,
    table_id: str,
    last: int,
    update: table_pb2.TableUpdate | None,
    fresh: Callable[[], Awaitable[table_pb2.TableView]],
    pushed: Callable[[table_pb2.TableUpdate], Awaitable[table_pb2.TableView | None]],
) -> gateway_pb2.SeatUpdate | None:
    """What to push for `update` (GAP: a fresh view, unless the table's stream shows nothing
    after `last`) after seq `last`, with the events between; None when it shows nothing new."""
    mine: table_pb2.TableView | None
    try:
        if update is GAP:
            if await feed.last_seq(table_id) == last:
                return None  # nothing committed while updates were lost: no view to read
            view = await fresh()
            seq, mine = view.seq, view
            events = await feed.events_between(table_id, last, seq)
        else:
            if update.seq <= last:
                return None  # already delivered (the join's view, or a refilled gap)
            seq, mine = update.seq, await pushed(update)
            if mine is None:
                raise SeatGone  # a new match without this player
            first = seq - len(update.events) + 1
            events = await feed.events_between(table_id, last, first - 1)
            events += update.events
            if mine.seq > seq:  # a view read after the update (a spectator's)
                events += await feed.events_between(table_id, seq, mine.seq)
                seq = mine.seq
    except ServiceError as err:
        if err.status in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.NOT_FOUND):
            raise SeatGone from err
        raise
    if seq <= last:
        return None
    return gateway_pb2.SeatUpdate(seq=seq, events=events, view=mine)


def play_update(table_id: str, update: gateway_pb2.SeatUpdate) -> gateway_pb2.PlayUpdate:
    return gateway_pb2.PlayUpdate(update=update, table_id=table_id)
