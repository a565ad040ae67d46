"""A stream's updates and answers (services/gateway/feed.py and seat_relay.py; issues 25 and 62):
one message per seat per commit, the command's result riding on the update that shows it
whether the update or the command's reply came first, answers in the order sent, an
update that came while the command was out never lost, and nothing lost when a stream falls
behind. The feed runs whole; Redis is a fake stream of seqs 1..n (the real one: test_feed.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2
from bg.table.v1 import table_pb2
from services.gateway import feed as feed_module
from services.gateway.feed import GAP, QUEUE_LIMIT, Answer, Subscription, TableFeed
from services.gateway.seat_relay import END, relay_updates

T = "t1"


class Stream:
    """The table's events as its Redis stream holds them (seqs 1..n): what the feed's reads and
    the relay's gap fills read, counted."""

    def __init__(self, upto: int) -> None:
        self.upto = upto
        self.reads = 0

    async def events_between(
        self, table_id: str, after_seq: int, upto_seq: int
    ) -> list[events_pb2.TableEvent]:
        self.reads += 1
        return [events_pb2.TableEvent(seq=s) for s in range(after_seq + 1, upto_seq + 1)]

    async def last_seq(self, table_id: str) -> int | None:
        return self.upto


class Quiet:
    """A pub/sub connection nothing comes on (the tests ring the feed themselves)."""

    connection = None

    async def subscribe(self, *channels: str) -> None: ...
    async def unsubscribe(self, *channels: str) -> None: ...
    async def ping(self, *message: str) -> None: ...
    async def aclose(self) -> None: ...

    async def get_message(self, timeout: float) -> None:
        await asyncio.sleep(timeout)


class StreamRedis:
    """Redis as the feed reads it: the table's stream (XRANGE) and a quiet pub/sub."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    async def initialize(self) -> None: ...

    def pubsub(self, **options: Any) -> Quiet:
        return Quiet()

    async def xrange(self, key: str, min: str, max: str, count: int) -> list[Any]:
        self.stream.reads += 1
        low, high = int(min[1:].split("-")[0]), int(max.split("-")[0])
        return [(f"{s}-0".encode(), {b"e": _event(s)}) for s in range(low + 1, high + 1)]


def _event(seq: int) -> bytes:
    return events_pb2.TableEvent(seq=seq).SerializeToString()


def commit(seq: int) -> table_pb2.TableUpdate:
    seated = ["a", "b"]
    views = [table_pb2.TableView(table_id=T, seq=seq, seat=s, player_ids=seated) for s in (0, 1)]
    return table_pb2.TableUpdate(
        table_id=T, seq=seq, events=[events_pb2.TableEvent(seq=seq)], views=views
    )


def result(seq: int, no: int) -> gateway_pb2.PlayUpdate:
    answer = gateway_pb2.CommandResult(command_id=f"c{no}", seq=seq, request_no=no)
    return gateway_pb2.PlayUpdate(result=answer, table_id=T)


def refusal(no: int) -> gateway_pb2.PlayUpdate:
    failed = gateway_pb2.CommandError(command_id=f"c{no}", request_no=no)
    return gateway_pb2.PlayUpdate(error=failed, table_id=T)


async def run(
    items: list[tuple[Any, ...]], combine: bool = True, settle_s: float = 0.0
) -> list[object]:
    """Play `items` through a feed and a relay for seat 0, as a Play stream does: ("out",) a
    command sent; ("ring", seq) the commit's update on the table's channel; ("accepted", seq,
    no) and ("refused", no) a command's reply; ("lost",) the pub/sub connection broke.
    Returns what the stream would write, in order."""
    stream = Stream(upto=100)
    feed = TableFeed(StreamRedis(stream))
    sub = await feed.subscribe(T)
    out: asyncio.Queue[gateway_pb2.PlayUpdate | None] = asyncio.Queue()

    async def fresh() -> table_pb2.TableView:
        return table_pb2.TableView(table_id=T, seq=stream.upto, seat=0, player_ids=["a", "b"])

    async def pushed(update: table_pb2.TableUpdate) -> table_pb2.TableView | None:
        return update.views[0]

    relay = asyncio.create_task(relay_updates(stream, sub, 0, out, fresh, pushed, combine))
    for item in items:
        if item[0] == "out":
            sub.busy = True
        elif item[0] == "ring":
            feed.ring(commit(item[1]))
        elif item[0] == "accepted":
            feed.answer(T, item[1], sub, result(item[1], item[2]))
        elif item[0] == "refused":
            feed.alone(T, sub, refusal(item[1]))
        else:
            feed._refill_all()
        await asyncio.sleep(0)
    await asyncio.sleep(settle_s)
    feed.alone(T, sub, END)
    await asyncio.wait_for(relay, 5)
    await feed.close()
    written: list[object] = []
    while (message := out.get_nowait()) is not None:
        written.append(message)
    return written


def shape(messages: list[object]) -> list[tuple[str, int]]:
    """Each message as (kind, seq); an update carrying a result is ("update+result", seq)."""
    out = []
    for m in messages:
        assert isinstance(m, gateway_pb2.PlayUpdate)
        kind = m.WhichOneof("kind")
        if kind == "update":
            tag = "update+result" if m.update.HasField("result") else "update"
            out.append((tag, m.update.seq))
        elif kind == "result":
            out.append(("result", m.result.seq))
        else:
            out.append(("error", m.error.request_no))
    return out


async def test_the_update_first_then_the_reply_one_message_with_the_result() -> None:
    written = await run([("out",), ("ring", 1), ("accepted", 1, 1)])
    assert shape(written) == [("update+result", 1)]
    assert written[0].update.result.command_id == "c1"  # type: ignore[attr-defined]
    assert [e.seq for e in written[0].update.events] == [1]  # type: ignore[attr-defined]


async def test_the_reply_first_then_the_update_one_message_with_the_result() -> None:
    """The reply says seq 1 before the update came: the answer waits for it, with no timer."""
    assert shape(await run([("out",), ("accepted", 1, 1), ("ring", 1)])) == [("update+result", 1)]


async def test_without_the_join_flag_the_result_comes_alone_after_its_update() -> None:
    written = await run([("out",), ("ring", 1), ("accepted", 1, 1)], combine=False)
    assert shape(written) == [("update", 1), ("result", 1)]


async def test_a_refusal_in_between_keeps_the_order_sent() -> None:
    """Commands 1 (accepted), 2 (refused), 3 (accepted), with another seat's commit (2) while
    command 2 was out: every update once, each answer once, in the order sent."""
    items: list[tuple[Any, ...]] = [
        ("out",), ("ring", 1), ("accepted", 1, 1),
        ("out",), ("ring", 2), ("refused", 2),
        ("out",), ("accepted", 3, 3), ("ring", 3),
    ]  # fmt: skip
    assert shape(await run(items)) == [
        ("update+result", 1), ("update", 2), ("error", 2), ("update+result", 3)
    ]  # fmt: skip


async def test_an_update_while_the_command_is_out_goes_with_its_result() -> None:
    """Another seat's commit (1) comes while the stream's command (2) is out: nothing goes
    until the answer, which carries both commits' events (1 filled from the table's stream),
    in order, once."""
    written = await run([("out",), ("ring", 1), ("ring", 2), ("accepted", 2, 1)])
    assert shape(written) == [("update+result", 2)]
    assert [e.seq for e in written[0].update.events] == [1, 2]  # type: ignore[attr-defined]


async def test_an_update_goes_to_every_local_stream_with_no_read() -> None:
    """Two local streams: each commit's update is handed to both as it came, the table's
    stream never read."""
    stream = Stream(upto=3)
    feed = TableFeed(StreamRedis(stream))
    seats = [await feed.subscribe(T), await feed.subscribe(T)]
    for seq in (1, 2):
        feed.ring(commit(seq))
    for sub in seats:
        got = [sub.queue.get_nowait(), sub.queue.get_nowait()]
        assert [u.seq for u in got if isinstance(u, table_pb2.TableUpdate)] == [1, 2]
        assert sub.queue.empty()
    assert stream.reads == 0
    await feed.close()


async def test_a_lost_update_refills_and_the_waiting_answer_goes_alone() -> None:
    """The pub/sub connection broke with a reply waiting for its update: the stream refills
    from a fresh view (GAP), then the result follows on its own."""
    assert shape(await run([("out",), ("accepted", 1, 1), ("lost",)])) == [
        ("update", 100),
        ("result", 1),
    ]


async def test_a_stream_that_falls_behind_keeps_its_answers() -> None:
    """Past QUEUE_LIMIT waiting updates a subscription resynchronises (GAP) instead of
    buffering more, but never drops an answer: each command still gets one."""
    sub = Subscription(T)
    sub.deliver(Answer(refusal(1)))
    for seq in range(1, QUEUE_LIMIT + 5):
        sub.deliver(commit(seq))
    sub.deliver(Answer(result(7, 2), commit(7)))
    items = []
    while not sub.queue.empty():
        items.append(sub.queue.get_nowait())
    assert items[0] is GAP
    answers = [i for i in items if isinstance(i, Answer)]
    assert [a.message.WhichOneof("kind") for a in answers] == ["error", "result"]
    assert answers[0].update is None  # kept through the resync: the GAP's fresh view shows it
    assert answers[1].update is not None and len(items) < 10  # queued after it, as usual


async def test_an_update_that_never_comes_does_not_hold_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reply says seq 1 and pub/sub never delivers its update (at most once): past
    ANSWER_WAIT_S the stream refills from a fresh view and the result follows on its own
    (a 4,000-table soak lost 6 such updates; their answers waited for a clock's commit)."""
    monkeypatch.setattr(feed_module, "ANSWER_WAIT_S", 0.01)

    written = await run([("out",), ("accepted", 1, 1)], settle_s=0.1)
    assert shape(written) == [("update", 100), ("result", 1)]


async def _refill(stream: Stream, last: int, views: list[object]) -> tuple[list[object], int]:
    """A GAP through a relay for seat 0 that has pushed up to `last`; `views` are what each
    fresh() read gives (an exception is raised): what the stream wrote, and the reads."""
    sub = Subscription(T)
    out: asyncio.Queue[gateway_pb2.PlayUpdate | None] = asyncio.Queue()
    reads = 0
    settled = asyncio.Event()  # the last view read, or none needed

    async def fresh() -> table_pb2.TableView:
        nonlocal reads
        reads += 1
        view = views.pop(0)
        if not views:
            settled.set()
        if isinstance(view, Exception):
            raise view
        assert isinstance(view, table_pb2.TableView)
        return view

    async def pushed(update: table_pb2.TableUpdate) -> table_pb2.TableView | None:
        return update.views[0]

    if not views:
        settled.set()
    relay = asyncio.create_task(relay_updates(stream, sub, last, out, fresh, pushed))
    sub.deliver(GAP)
    await asyncio.wait_for(settled.wait(), 5)
    # the client closes its side: END goes after what the GAP brought
    sub.deliver(Answer(END))
    await asyncio.wait_for(relay, 5)
    written: list[object] = []
    while (message := out.get_nowait()) is not None:
        written.append(message)
    return written, reads


async def test_a_refill_of_a_table_that_did_not_move_reads_no_view() -> None:
    """After a broken feed every stream of the gateway refills at once: one that the table's
    stream shows nothing new for costs its table replica nothing (the soak's storm)."""
    written, reads = await _refill(Stream(upto=7), 7, [])
    assert (written, reads) == ([], 0)


async def test_a_refill_of_a_table_that_moved_pushes_a_fresh_view_and_the_events() -> None:
    view = table_pb2.TableView(table_id=T, seq=9, seat=0, player_ids=["a", "b"])
    written, reads = await _refill(Stream(upto=9), 7, [view])
    assert reads == 1 and shape(written) == [("update", 9)]
    update = written[0].update  # type: ignore[attr-defined]
    assert [e.seq for e in update.events] == [8, 9]


async def test_a_refill_that_fails_is_tried_again_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table replica too busy (DEADLINE_EXCEEDED) twice: tried again after a backoff, the
    stream stays open and gets its update."""
    from services.common.errors import ServiceError
    from services.gateway import seat_relay

    monkeypatch.setattr(seat_relay, "RESYNC_RETRY_S", 0.001)
    busy = ServiceError("DEADLINE_EXCEEDED", "busy", status=grpc.StatusCode.DEADLINE_EXCEEDED)
    view = table_pb2.TableView(table_id=T, seq=9, seat=0, player_ids=["a", "b"])
    written, reads = await _refill(Stream(upto=9), 7, [busy, busy, view])
    assert reads == 3 and shape(written) == [("update", 9)]
