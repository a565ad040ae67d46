"""A stream's relay (services/gateway/seat_relay.py, issue 25; the order: feed.py's Subscription):
one message per seat per commit, the command's result riding on the update that shows it
whichever copy of the commit came first, answers in the order sent, and nothing lost when a
stream falls behind."""

from __future__ import annotations

import asyncio

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
    """The table's events as its Redis stream holds them (seqs 1..n), for gap fills."""

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


async def run(items: list[object], combine: bool = True, last: int = 0) -> list[object]:
    """Feed `items` (updates, answers; ("due", n) marks n commands sent) through a relay for
    seat 0; returns what the stream would write, in order."""
    sub = Subscription(T)
    out: asyncio.Queue[gateway_pb2.PlayUpdate | None] = asyncio.Queue()
    feed = Stream(upto=100)

    async def fresh() -> table_pb2.TableView:
        return table_pb2.TableView(table_id=T, seq=feed.upto, seat=0, player_ids=["a", "b"])

    async def pushed(update: table_pb2.TableUpdate) -> table_pb2.TableView | None:
        return update.views[0]

    relay = asyncio.create_task(relay_updates(feed, sub, last, out, fresh, pushed, combine))
    for item in items:
        if isinstance(item, tuple):
            for _ in range(item[1]):
                sub.command_out()
        else:
            sub.deliver(item)  # type: ignore[arg-type]
        await asyncio.sleep(0)
    sub.command_out()
    sub.deliver(Answer(END))
    await asyncio.wait_for(relay, 5)
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


async def test_the_tables_copy_first_one_message_with_the_result() -> None:
    assert shape(await run([("due", 1), Answer(result(1, 1), commit(1)), commit(1)])) == [
        ("update+result", 1)
    ]


async def test_the_pubsub_copy_first_is_held_for_the_answer() -> None:
    """The pub/sub copy of the commit arrives while the command is out: it waits for the answer
    and goes out once, with the result (the table's copy is then a repeat)."""
    written = await run([("due", 1), commit(1), Answer(result(1, 1), commit(1))])
    assert shape(written) == [("update+result", 1)]
    assert written[0].update.result.command_id == "c1"  # type: ignore[attr-defined]


async def test_without_the_join_flag_the_result_comes_alone_after_its_update() -> None:
    written = await run([("due", 1), commit(1), Answer(result(1, 1), commit(1))], combine=False)
    assert shape(written) == [("update", 1), ("result", 1)]


async def test_a_refusal_in_between_keeps_the_order_sent() -> None:
    """Commands 1 (accepted), 2 (refused), 3 (accepted), with another seat's commit (2) in
    between: every update once, each answer once, in the order sent."""
    items: list[object] = [
        ("due", 1), Answer(result(1, 1), commit(1)),
        ("due", 1), commit(2), Answer(refusal(2)),
        ("due", 1), Answer(result(3, 3), commit(3)), commit(3),
    ]  # fmt: skip
    assert shape(await run(items)) == [
        ("update+result", 1), ("update", 2), ("error", 2), ("update+result", 3)
    ]  # fmt: skip


async def test_a_late_answer_does_not_hold_the_updates_past_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The answer never came within HOLD_S: the held update goes out alone, the answer (a
    duplicate's, already shown) after it on its own."""
    monkeypatch.setattr(feed_module, "HOLD_S", 0.01)
    sub = Subscription(T)
    out: asyncio.Queue[gateway_pb2.PlayUpdate | None] = asyncio.Queue()

    async def fresh() -> table_pb2.TableView:
        raise AssertionError("no gap here")

    async def pushed(update: table_pb2.TableUpdate) -> table_pb2.TableView | None:
        return update.views[0]

    relay = asyncio.create_task(relay_updates(Stream(5), sub, 0, out, fresh, pushed, True))
    sub.command_out()
    sub.deliver(commit(1))
    first = await asyncio.wait_for(out.get(), 5)  # sent without waiting for the answer
    assert first is not None and shape([first]) == [("update", 1)]
    sub.deliver(Answer(result(1, 1), commit(1)))
    second = await asyncio.wait_for(out.get(), 5)
    assert second is not None and shape([second]) == [("result", 1)]
    relay.cancel()


async def test_a_gap_is_filled_before_the_commit_that_carries_the_result() -> None:
    """The table's copy of commit 3 comes while the stream has seen only 1: the events of 2
    are read from the stream and pushed with it, once."""
    written = await run([commit(1), ("due", 1), Answer(result(3, 1), commit(3)), commit(2)])
    assert shape(written) == [("update", 1), ("update+result", 3)]
    assert [e.seq for e in written[1].update.events] == [2, 3]  # type: ignore[attr-defined]


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


async def test_a_commit_the_reply_brought_reaches_every_local_stream_at_once() -> None:
    """Way 1 (feed.py): the reply's update goes to the table's other local streams as an
    update and to the commanding one with its answer; a refusal to the commanding one alone."""
    feed = TableFeed(redis=None)
    mine, theirs = Subscription(T), Subscription(T)
    feed.subscribers[T] = {mine, theirs}
    feed.answered(mine, result(1, 1), commit(1))
    assert theirs.queue.get_nowait() == commit(1)
    answer = mine.queue.get_nowait()
    assert isinstance(answer, Answer) and answer.update == commit(1)
    feed.answered(mine, refusal(2))
    assert theirs.queue.empty()
    refused = mine.queue.get_nowait()
    assert isinstance(refused, Answer) and refused.update is None


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
    sub.command_out()  # the client closes its side: END goes after what the GAP brought
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
