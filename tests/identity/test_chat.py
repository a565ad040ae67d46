"""Table chat and kibitz across two gateways on real Valkey (issue 29 req. 2): each gateway is
its feed and live chat delivery, as services/gateway/app.py wires them, on an identity replica
of its own (its chat room, as services/identity/app.py wires it); the lobby is a fixed seating.
Delivered once to the right readers, kibitz hidden from the players until the match is over,
mutes honoured on the other gateway, and bad input refused with nothing stored."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bg.gateway.v1 import gateway_pb2
from services.common.errors import ServiceError
from services.common.shared_rate_limits import SharedLimiter
from services.contracts.redis_keys import chat_key, rate_limit_key
from services.gateway.chat_delivery import ChatDelivery, Listener
from services.gateway.feed import TableFeed
from services.identity.chat import KIBITZ, TABLE, ChatRoom, Seating
from services.identity.chat_moderation import ChatModeration

pytestmark = [pytest.mark.integration, pytest.mark.single_valkey]
ALICE, BOB, CAROL, DAVE = "palice", "pbob", "pcarol", "gdave"  # "g": a guest


@dataclass
class Gateway:
    feed: TableFeed
    chat: ChatDelivery
    room: ChatRoom  # its identity replica's
    subs: list[Any] = field(default_factory=list)

    async def reader(self, table_id: str, viewer: str, seated: bool) -> asyncio.Queue[Any]:
        """A stream of `viewer` here: subscribed to the table's feed, listening to its chat."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self.subs.append(await self.feed.subscribe(table_id))
        self.chat.listen(Listener(table_id, viewer, seated, queue.put_nowait))
        return queue


class Lobby:
    """The tables' seating, as the matchmaking service would answer it."""

    def __init__(self) -> None:
        self.tables: dict[str, Seating] = {}

    def of(self, table_id: str, player: str, phase: bool) -> Any:
        async def answer() -> Seating:
            if table_id not in self.tables:
                raise ServiceError("TABLE_NOT_FOUND", "no such table")
            return self.tables[table_id]

        return answer()


def _gateway(
    redis: Any, lobby: Lobby, per_s: float = 100.0, burst: float = 100.0, guests: bool = True
) -> Gateway:
    limits = SharedLimiter(redis, "chat", per_s, 0.05, burst=burst, key_of=rate_limit_key)
    room = ChatRoom(redis, lobby.of, limits, 50, guests)
    delivery = ChatDelivery(room.hidden_from)
    return Gateway(TableFeed(redis, on_chat=delivery.received), delivery, room)


@pytest.fixture
def lobby() -> Lobby:
    return Lobby()


@pytest.fixture
async def two(redis: Any, lobby: Lobby) -> AsyncIterator[list[Gateway]]:
    gateways = [_gateway(redis, lobby), _gateway(redis, lobby)]
    yield gateways
    for g in gateways:
        await g.chat.close()
        await g.feed.close()


def _table(lobby: Lobby, watchable: bool = True) -> str:
    table_id = f"c{uuid.uuid4().hex[:10]}"
    lobby.tables[table_id] = Seating((ALICE, BOB), watchable, "m1")
    return table_id


def _say(table_id: str, text: str, channel: Any = TABLE) -> gateway_pb2.SendChatRequest:
    return gateway_pb2.SendChatRequest(table_id=table_id, channel=channel, text=text)


async def _words(queue: asyncio.Queue[Any], n: int) -> list[str]:
    """The next `n` chat texts on a stream, then proof that nothing else is coming."""
    out = [(await asyncio.wait_for(queue.get(), 5)).chat.text for _ in range(n)]
    await asyncio.sleep(0.3)
    assert queue.empty(), f"more than {n} messages: {queue.get_nowait()}"
    return out


async def _stored(redis: Any, table_id: str) -> int:
    return int(await redis.xlen(chat_key(table_id)))


async def test_table_chat_reaches_both_players_once_and_kibitz_only_the_spectators(
    redis: Any, two: list[Gateway], lobby: Lobby
) -> None:
    table_id = _table(lobby)
    a, b = two
    alice = await a.reader(table_id, ALICE, True)
    bob = await b.reader(table_id, BOB, True)
    carol = await b.reader(table_id, CAROL, False)  # a spectator, on bob's gateway
    dave = await a.reader(table_id, DAVE, False)
    await a.room.send(ALICE, _say(table_id, "  good luck  "))
    await b.room.send(CAROL, _say(table_id, "nice opening", KIBITZ))
    assert await _words(alice, 1) == ["good luck"]  # trimmed, and to its sender's stream too
    assert await _words(bob, 1) == ["good luck"]
    assert await _words(carol, 1) == ["nice opening"]  # table chat is the players' own
    assert await _words(dave, 1) == ["nice opening"]

    # History: the same split, kibitz shown to the players once the match is over.
    seating = lobby.tables[table_id]
    history = await a.room.history(ALICE, table_id)
    assert [m.text for m in history] == ["good luck"]
    spectators = await b.room.history(CAROL, table_id)
    assert [m.text for m in spectators] == ["nice opening"]
    lobby.tables[table_id] = Seating(seating.player_ids, True, "m1", match_over=True)
    after = await a.room.history(ALICE, table_id)
    assert [(m.text, m.channel) for m in after] == [("good luck", TABLE), ("nice opening", KIBITZ)]
    # A rematch: the first match's kibitz stays readable, the new one's waits for its end.
    lobby.tables[table_id] = Seating(seating.player_ids, True, "m2")
    await a.room.send(DAVE, _say(table_id, "again!", KIBITZ))
    later = await b.room.history(BOB, table_id)
    assert [m.text for m in later] == ["good luck", "nice opening"]
    assert [m.match_id for m in await b.room.history(CAROL, table_id)] == ["m1", "m2"]


async def test_a_mute_made_on_one_gateway_holds_on_the_other(
    redis: Any, two: list[Gateway], lobby: Lobby
) -> None:
    table_id = _table(lobby)
    a, b = two
    bob = await b.reader(table_id, BOB, True)
    assert await a.room.mute(BOB, ALICE, True) == [ALICE]  # bob mutes alice, on gateway a
    await a.room.send(ALICE, _say(table_id, "hello?"))
    await b.room.send(BOB, _say(table_id, "anyone?"))
    assert await _words(bob, 1) == ["anyone?"]  # alice's words never reach bob
    assert [m.text for m in await b.room.history(BOB, table_id)] == ["anyone?"]
    assert await b.room.mute(BOB, ALICE, False) == []
    await a.room.send(ALICE, _say(table_id, "now?"))
    assert await _words(bob, 1) == ["now?"]
    texts = [m.text for m in await b.room.history(BOB, table_id)]
    assert texts == ["hello?", "anyone?", "now?"]  # unmuted: the history is whole again


@pytest.mark.parametrize(
    ("who", "request_", "code"),
    [
        (ALICE, gateway_pb2.SendChatRequest(channel=TABLE, text=""), "CHAT_EMPTY"),
        (ALICE, gateway_pb2.SendChatRequest(channel=TABLE, text="   "), "CHAT_EMPTY"),
        (ALICE, gateway_pb2.SendChatRequest(channel=TABLE, text="x" * 51), "CHAT_TOO_LONG"),
        (ALICE, gateway_pb2.SendChatRequest(channel=TABLE, text="bell\a"), "CHAT_BAD_TEXT"),
        (ALICE, gateway_pb2.SendChatRequest(channel=TABLE, text="rtl\u202e"), "CHAT_BAD_TEXT"),
        (
            ALICE,
            gateway_pb2.SendChatRequest(channel=gateway_pb2.CHAT_CHANNEL_UNSPECIFIED, text="hi"),
            "CHAT_CHANNEL",
        ),
        (CAROL, gateway_pb2.SendChatRequest(channel=TABLE, text="hi"), "CHAT_NOT_SEATED"),
        (ALICE, gateway_pb2.SendChatRequest(channel=KIBITZ, text="hi"), "CHAT_KIBITZ_PLAYERS"),
    ],
)
async def test_bad_messages_are_refused_typed_and_nothing_is_stored_or_sent(
    redis: Any, two: list[Gateway], lobby: Lobby, who: str, request_: Any, code: str
) -> None:
    table_id = _table(lobby)
    request_.table_id = table_id
    a, b = two
    readers = [await b.reader(table_id, p, p in (ALICE, BOB)) for p in (ALICE, CAROL)]
    with pytest.raises(ServiceError) as refused:
        await a.room.send(who, request_)
    assert refused.value.code == code
    assert await _stored(redis, table_id) == 0
    for queue in readers:
        assert await _words(queue, 0) == []


async def test_strangers_tables_guests_and_floods_are_refused(redis: Any, lobby: Lobby) -> None:
    private = _table(lobby, watchable=False)
    room = _gateway(redis, lobby, per_s=0.01, burst=2, guests=False)
    other = _gateway(redis, lobby, per_s=0.01, burst=2, guests=False)
    try:
        with pytest.raises(ServiceError) as stranger:
            await room.room.send(CAROL, _say(private, "let me in", KIBITZ))
        assert stranger.value.code == "NOT_WATCHABLE"
        with pytest.raises(ServiceError) as peek:
            await room.room.history(CAROL, private)
        assert peek.value.code == "NOT_WATCHABLE"
        with pytest.raises(ServiceError) as unknown:
            await room.room.send(ALICE, _say("nosuchtable", "hi"))
        assert unknown.value.code == "TABLE_NOT_FOUND"
        lobby.tables[private] = Seating((ALICE, DAVE), False, "m1")
        with pytest.raises(ServiceError) as guest:
            await room.room.send(DAVE, _say(private, "hi"))
        assert guest.value.code == "CHAT_GUESTS"
        assert await _stored(redis, private) == 0

        # Two messages of burst, then refused: on either replica (the counts meet in Redis).
        await room.room.send(ALICE, _say(private, "one"))
        await room.room.limiter.sync()  # its count reaches Redis (the limiter's task, here)
        await other.room.send(ALICE, _say(private, "two"))
        await other.room.limiter.sync()
        await room.room.limiter.sync()
        for gateway in (room, other):
            with pytest.raises(ServiceError) as flood:
                await gateway.room.send(ALICE, _say(private, "three"))
            assert flood.value.code == "RATE_LIMITED"
            assert int(flood.value.metadata["retry_after_ms"]) > 0
        assert await _stored(redis, private) == 2

        with pytest.raises(ServiceError) as mute_self:
            await room.room.mute(ALICE, ALICE, True)
        assert mute_self.value.code == "CHAT_MUTE_SELF"
    finally:
        for g in (room, other):
            await g.chat.close()
            await g.feed.close()


async def test_a_tables_chat_is_kept_a_day_and_bounded(
    redis: Any, two: list[Gateway], lobby: Lobby
) -> None:
    table_id = _table(lobby)
    await two[0].room.send(ALICE, _say(table_id, "hi"))
    ttl = await redis.ttl(chat_key(table_id))
    assert 86_000 < ttl <= 86_400


async def test_a_report_carries_its_context_once_and_an_operator_removes_and_silences(
    redis: Any, two: list[Gateway], lobby: Lobby
) -> None:
    """The players' side (report) on the identity's chat rooms, the operators' (the queue,
    removal, silence) on the identity service's moderation of the same Redis state."""
    table_id = _table(lobby)
    a, b = two
    ops = ChatModeration(redis)
    bob = await b.reader(table_id, BOB, True)
    for text in ("hi", "gg", "you are bad"):
        await a.room.send(ALICE, _say(table_id, text))
    await b.room.send(CAROL, _say(table_id, "kibitz", KIBITZ))
    assert await _words(bob, 3) == ["hi", "gg", "you are bad"]
    messages = await b.room.history(BOB, table_id)
    bad = messages[-1]

    def report(who: str, message_id: str, reason: str = "insult") -> Any:
        request = gateway_pb2.ReportChatRequest(
            table_id=table_id, message_id=message_id, reason=reason
        )
        return b.room.report(who, request)

    first = await report(BOB, bad.message_id)
    assert await report(BOB, bad.message_id) == first  # the same report, not a second one
    kibitz = (await b.room.history(CAROL, table_id))[0]
    for who, message_id, reason, code in (
        (BOB, kibitz.message_id, "rude", "UNKNOWN_MESSAGE"),  # not his to read (yet)
        (BOB, "nosuchmessage", "rude", "UNKNOWN_MESSAGE"),
        (BOB, bad.message_id, "", "REASON_REQUIRED"),
    ):
        with pytest.raises(ServiceError) as refused:
            await report(who, message_id, reason)
        assert refused.value.code == code
    queued = [r for r in await ops.reports(200) if r.report_id == first]
    assert len(queued) == 1 and queued[0].reporter_id == BOB and queued[0].reason == "insult"
    assert queued[0].message.text == "you are bad"
    assert [m.text for m in queued[0].context] == ["hi", "gg"]  # its channel's, before it

    # Removed: gone from the history, and the stream that showed it is told once.
    assert await ops.remove(table_id, bad.message_id)
    assert not await ops.remove(table_id, bad.message_id)  # removed already
    notice = (await asyncio.wait_for(bob.get(), 5)).chat
    assert notice.removed and notice.message_id == bad.message_id and notice.text == ""
    assert [m.text for m in await b.room.history(BOB, table_id)] == ["hi", "gg"]
    assert await ops.resolve(first) and not await ops.resolve(first)

    # Silenced for a time, on every gateway; lifted early.
    until = await ops.silence(ALICE, 600)
    assert until > 0
    with pytest.raises(ServiceError) as silenced:
        await b.room.send(ALICE, _say(table_id, "unfair"))
    assert silenced.value.code == "CHAT_SILENCED"
    assert 590_000 < int(silenced.value.metadata["retry_after_ms"]) <= 600_000
    assert await ops.silence(ALICE, 0) == 0
    await b.room.send(ALICE, _say(table_id, "sorry"))
    assert await _words(bob, 1) == ["sorry"]
    with pytest.raises(ServiceError) as too_long:
        await ops.silence(ALICE, 31 * 86_400)
    assert too_long.value.code == "INVALID_AMOUNT"
