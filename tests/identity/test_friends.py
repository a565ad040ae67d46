"""Friends across two gateways on real Valkey (issue 29 req. 3): each gateway is its presence,
Friends streams and chat delivery, as services/gateway/app.py wires them, on an identity
replica of its own (its friends and chat room, as services/identity/app.py wires them), on one
Valkey; the lobby is an in-memory one behind the friends' port (the cluster test,
tests/cluster/test_gateway.py, plays a challenge on the real matchmaking). Presence from the
gateways' live streams, challenges answered exactly once, blocks honoured on the other
gateway, bad input refused with nothing stored."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.errors import ServiceError
from services.common.shared_rate_limits import SharedLimiter
from services.contracts.redis_keys import rate_limit_key
from services.gateway.adapters.redis_presence import RedisPresenceStore
from services.gateway.chat_delivery import ChatDelivery, Listener
from services.gateway.feed import TableFeed
from services.gateway.friends_streams import FriendsStreams
from services.gateway.presence import Presence
from services.identity.adapters.redis_presence import RedisPlayerPresence
from services.identity.chat import TABLE, ChatRoom, Seating
from services.identity.friends import OFFLINE, ONLINE, PLAYING, WAITING, Friends
from services.identity.social import Social

pytestmark = [pytest.mark.integration, pytest.mark.single_valkey]


class Lobby:
    """The matchmaking service as friends use it: private tables by code, dealt when full."""

    def __init__(self) -> None:
        self.tables: dict[str, matchmaking_pb2.LobbyTable] = {}
        self.requests: dict[tuple[str, str], str] = {}
        self.leaves: list[tuple[str, str]] = []
        self.refuse_join: ServiceError | None = None
        self.over: set[str] = set()  # dealt tables whose match has ended (the table service's)

    def add(self, host: str, status: str, watchable: bool, guest: str = "") -> str:
        table_id = f"t{uuid.uuid4().hex[:10]}"
        self.tables[table_id] = matchmaking_pb2.LobbyTable(
            table_id=table_id, code=table_id.upper(), host_id=host, status=status,
            player_ids=[host, guest], watchable=watchable,
        )  # fmt: skip
        return table_id

    async def create(
        self, player_id: str, options: table_pb2.TableOptions, request_id: str
    ) -> matchmaking_pb2.LobbyTable:
        first = self.requests.get((player_id, request_id))
        if first is None:
            first = self.requests[(player_id, request_id)] = self.add(player_id, "open", False)
            self.tables[first].options.CopyFrom(options)
        return self.tables[first]

    async def join(self, player_id: str, code: str, request_id: str) -> matchmaking_pb2.LobbyTable:
        await asyncio.sleep(0.01)  # a real call's pause, so concurrent answers interleave
        if self.refuse_join is not None:
            raise self.refuse_join
        table = next(t for t in self.tables.values() if t.code == code)
        if player_id in table.player_ids:
            return table
        if table.status != "open":
            raise ServiceError("TABLE_NOT_OPEN", f"the table is {table.status}")
        table.player_ids[1] = player_id
        table.status = "dealt"
        return table

    async def leave(self, player_id: str, table_id: str) -> None:
        self.leaves.append((player_id, table_id))
        self.tables[table_id].status = "closed"

    async def table(self, table_id: str) -> matchmaking_pb2.LobbyTable | None:
        return self.tables.get(table_id)

    async def in_play(self, table_id: str) -> bool:
        return table_id not in self.over

    async def seated(self, player_id: str) -> list[matchmaking_pb2.LobbyTable]:
        return [
            t for t in self.tables.values() if player_id in t.player_ids and t.status != "closed"
        ]


@dataclass
class Clock:
    ms: int = 1_000_000

    def __call__(self) -> int:
        return self.ms


@dataclass
class Gateway:
    presence: Presence
    streams: FriendsStreams  # this gateway's Friends streams, on its identity replica
    friends: Friends  # its identity replica's
    room: ChatRoom  # its identity replica's
    chat: ChatDelivery
    feed: TableFeed
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def stream(
        self, player: str, refresh_s: float = 60.0
    ) -> asyncio.Queue[gateway_pb2.FriendsView]:
        """`player`'s Friends stream here: its views, in order."""
        views: asyncio.Queue[gateway_pb2.FriendsView] = asyncio.Queue()

        async def write(view: gateway_pb2.FriendsView) -> None:
            views.put_nowait(view)

        self.tasks.append(
            asyncio.create_task(self.streams.stream(player, write, refresh_s=refresh_s))
        )
        return views


NAMES = {"ann": "Ann", "bob": "Bob", "cid": "Cid", "dee": "Dee", "eve": "Eve"}


async def _seating(table_id: str, player: str, phase: bool) -> Seating:
    return Seating(("ann", "bob"), False, "m1")


async def _names(wanted: list[str]) -> dict[str, str]:
    return {p: NAMES[p] for p in wanted if p in NAMES}


@pytest.fixture
def lobby() -> Lobby:
    return Lobby()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def two(redis: Any, lobby: Lobby, clock: Clock) -> AsyncIterator[list[Gateway]]:
    gateways = []
    for _ in range(2):
        presence = Presence(RedisPresenceStore(redis), ttl_s=15, clock=clock)
        limits = SharedLimiter(redis, "chat", 100, 0.05, burst=100, key_of=rate_limit_key)
        room = ChatRoom(redis, _seating, limits, 50, True)
        friends = Friends(redis, RedisPlayerPresence(redis), lobby, _names, 3, 300, now=clock)
        streams = FriendsStreams(Social(room, friends), presence, refresh_s=60.0)
        delivery = ChatDelivery(room.hidden_from)
        feed = TableFeed(redis, on_chat=delivery.received)
        gateways.append(Gateway(presence, streams, friends, room, delivery, feed))
    yield gateways
    for g in gateways:
        for task in g.tasks:
            task.cancel()
        await asyncio.gather(*g.tasks, return_exceptions=True)
        await g.chat.close()
        await g.feed.close()


def _statuses(view: gateway_pb2.FriendsView) -> dict[str, tuple[int, str]]:
    return {f.player_id: (f.status, f.table_id) for f in view.friends}


async def _view_until(views: asyncio.Queue[gateway_pb2.FriendsView], ok: Any) -> Any:
    """The stream's views until one satisfies `ok` (each pushed because something changed)."""
    while True:
        view = await asyncio.wait_for(views.get(), 5)
        if ok(view):
            return view


async def _status_of(gateway: Gateway, player: str, challenge_id: str) -> str:
    received = (await gateway.friends.view(player)).received
    return next(c.status for c in received if c.challenge_id == challenge_id)


async def _keys(redis: Any) -> set[bytes]:
    return set(await redis.keys("friends:*"))


async def test_a_followed_players_presence_comes_from_the_gateways_live_streams(
    two: list[Gateway], lobby: Lobby, clock: Clock
) -> None:
    a, b = two
    assert _statuses(await a.friends.follow("ann", "bob", True)) == {"bob": (OFFLINE, "")}
    bob_online = b.stream("bob")  # bob's Friends stream, on the other gateway
    await _view_until(bob_online, lambda v: True)
    assert _statuses(await a.friends.view("ann")) == {"bob": (ONLINE, "")}

    # Issue 41, item 6: seated at a table waiting for an opponent, with no Play stream (there
    # is no match to stream before the deal): waiting, and at a public table, which one.
    public = lobby.add("bob", "open", watchable=True)
    await asyncio.sleep(2.1)  # past the seats' cache
    assert _statuses(await a.friends.view("ann")) == {"bob": (WAITING, public)}
    lobby.tables[public].status = "closed"
    waiting = lobby.add("bob", "open", watchable=False)
    await asyncio.sleep(2.1)
    assert _statuses(await a.friends.view("ann")) == {"bob": (WAITING, "")}
    await b.presence.opened(waiting, "bob", "play-1")  # a stream at it changes nothing
    assert _statuses(await a.friends.view("ann")) == {"bob": (WAITING, "")}

    # Dealt at a table anyone may watch: playing, and ann is told which table to watch.
    watched = lobby.add("bob", "dealt", watchable=True, guest="cid")
    await b.presence.opened(watched, "bob", "play-2")
    await asyncio.sleep(2.1)  # past the table cache
    assert _statuses(await a.friends.view("ann")) == {"bob": (PLAYING, watched)}
    # A private match shows as playing, without its table.
    lobby.tables[watched].watchable = False
    await asyncio.sleep(2.1)
    found = (await a.friends.view("ann")).friends[0]
    assert (found.status, found.watchable, found.table_id) == (PLAYING, False, "")
    # Issue 60, item 1: his match ends with its stream still open (the end panel; the lobby
    # keeps the table dealt): the finished match counts for nothing, and offers no Watch (here
    # he still waits at his other table).
    lobby.tables[watched].watchable = True
    lobby.over.add(watched)
    await asyncio.sleep(2.1)
    assert _statuses(await a.friends.view("ann")) == {"bob": (WAITING, "")}

    # The match ends and his streams close: online again (the Friends stream), then offline.
    await b.presence.closed(waiting, "bob", "play-1")
    await b.presence.closed(watched, "bob", "play-2")
    lobby.tables[waiting].status = lobby.tables[watched].status = "closed"
    await asyncio.sleep(2.1)
    assert _statuses(await a.friends.view("ann")) == {"bob": (ONLINE, "")}
    b.tasks.pop().cancel()
    await asyncio.sleep(0.1)
    assert _statuses(await a.friends.view("ann")) == {"bob": (OFFLINE, "")}

    # A gateway that dies takes its players' presence with it when its lease lapses, before
    # any sweeper has closed its streams.
    await b.presence.opened(waiting, "bob", "play-3")
    assert _statuses(await a.friends.view("ann"))["bob"][0] != OFFLINE
    clock.ms += 16_000  # b never renews
    assert _statuses(await a.friends.view("ann")) == {"bob": (OFFLINE, "")}


async def test_the_friends_stream_is_woken_by_its_gateway_and_refreshed_for_the_others(
    two: list[Gateway], lobby: Lobby
) -> None:
    a, b = two
    await b.friends.follow("bob", "ann", True)
    await a.friends.follow("ann", "bob", True)
    ann = a.stream("ann", refresh_s=60)  # never refreshes by itself within the test
    first = await asyncio.wait_for(ann.get(), 5)
    assert list(first.received) == []
    # A challenge made on ann's gateway reaches her stream at once.
    sent = await a.streams.challenge("bob", gateway_pb2.ChallengeRequest(player_id="ann"))
    view = await asyncio.wait_for(ann.get(), 5)
    assert [(c.challenge_id, c.from_name, c.status) for c in view.received] == [
        (sent.challenge.challenge_id, "Bob", "pending")
    ]
    # What another gateway did shows within the refresh.
    cid = b.stream("cid")
    await asyncio.wait_for(cid.get(), 5)
    await a.friends.follow("ann", "cid", True)
    fast = a.stream("ann", refresh_s=0.2)
    await _view_until(fast, lambda v: _statuses(v).get("cid") == (ONLINE, ""))


async def test_a_challenge_is_answered_once_and_an_accept_retried_seats_once(
    two: list[Gateway], lobby: Lobby, redis: Any
) -> None:
    a, b = two
    await a.friends.follow("ann", "bob", True)
    options = table_pb2.TableOptions(profile="casual", match_length=3)
    request = gateway_pb2.ChallengeRequest(player_id="bob", options=options, request_id="r1")
    sent = await a.friends.challenge("ann", request)
    again = await a.friends.challenge("ann", request)  # a retry: the same challenge and table
    assert again.challenge.challenge_id == sent.challenge.challenge_id
    assert again.table.table_id == sent.table.table_id and len(lobby.tables) == 1
    assert sent.table.host_id == "ann" and sent.challenge.options.match_length == 3
    cid = sent.challenge.challenge_id

    # A stranger cannot answer it, nor can the challenger.
    for stranger in ("cid", "ann"):
        with pytest.raises(ServiceError) as refused:
            await b.friends.answer(stranger, gateway_pb2.AnswerChallengeRequest(challenge_id=cid))
        assert refused.value.code == "UNKNOWN_CHALLENGE"

    # An accept and a decline at once, on two gateways: exactly one wins.
    answers = await asyncio.gather(
        a.friends.answer("bob", gateway_pb2.AnswerChallengeRequest(challenge_id=cid, accept=True)),
        b.friends.answer("bob", gateway_pb2.AnswerChallengeRequest(challenge_id=cid)),
        return_exceptions=True,
    )
    won = [x for x in answers if isinstance(x, gateway_pb2.ChallengeAnswer)]
    lost = [x for x in answers if isinstance(x, ServiceError)]
    assert len(won) == 1 and [e.code for e in lost] == ["CHALLENGE_ANSWERED"]
    table = lobby.tables[sent.table.table_id]
    if won[0].challenge.status == "accepted":
        assert list(table.player_ids) == ["ann", "bob"] and table.status == "dealt"
        assert lobby.leaves == []
        # An accept retried (its answer lost) answers the same table again.
        retried = await b.friends.answer(
            "bob", gateway_pb2.AnswerChallengeRequest(challenge_id=cid, accept=True)
        )
        assert retried.table.table_id == table.table_id
    else:
        assert table.status == "closed" and lobby.leaves == [("ann", table.table_id)]
    view = await a.friends.view("ann")
    assert [c.status for c in view.sent] == [won[0].challenge.status]


async def test_a_declined_challenge_closes_its_table_and_a_gone_table_says_so(
    two: list[Gateway], lobby: Lobby, clock: Clock
) -> None:
    a, b = two
    await a.friends.follow("ann", "bob", True)
    first = await a.friends.challenge("ann", gateway_pb2.ChallengeRequest(player_id="bob"))
    declined = await b.friends.answer(
        "bob", gateway_pb2.AnswerChallengeRequest(challenge_id=first.challenge.challenge_id)
    )
    assert declined.challenge.status == "declined" and not declined.HasField("table")
    assert lobby.tables[first.table.table_id].status == "closed"
    assert lobby.leaves == [("ann", first.table.table_id)]
    # The challenger left the table before the answer: accepting says the table is gone.
    second = await a.friends.challenge("ann", gateway_pb2.ChallengeRequest(player_id="bob"))
    lobby.tables[second.table.table_id].status = "closed"
    accept = gateway_pb2.AnswerChallengeRequest(
        challenge_id=second.challenge.challenge_id, accept=True
    )
    with pytest.raises(ServiceError) as gone:
        await b.friends.answer("bob", accept)
    assert gone.value.code == "CHALLENGE_GONE"
    # A join the lobby refuses for another reason leaves the challenge pending, to retry.
    third = await a.friends.challenge("ann", gateway_pb2.ChallengeRequest(player_id="bob"))
    lobby.refuse_join = ServiceError("CANNOT_COVER", "not enough diamonds")
    accept.challenge_id = third.challenge.challenge_id
    with pytest.raises(ServiceError) as poor:
        await b.friends.answer("bob", accept)
    assert poor.value.code == "CANNOT_COVER"
    assert await _status_of(b, "bob", third.challenge.challenge_id) == "pending"
    # Lapsed: refused, and shown as expired.
    clock.ms += 301_000
    lobby.refuse_join = None
    with pytest.raises(ServiceError) as late:
        await b.friends.answer("bob", accept)
    assert late.value.code == "CHALLENGE_EXPIRED"
    assert await _status_of(b, "bob", third.challenge.challenge_id) == "expired"


async def test_bad_follows_and_challenges_are_refused_typed_with_nothing_stored(
    two: list[Gateway], lobby: Lobby, redis: Any
) -> None:
    a, _ = two
    before = await _keys(redis)
    cases = [
        (a.friends.follow("ann", "ann", True), "FRIEND_SELF"),
        (a.friends.follow("ann", "", True), "MISSING"),
        (a.friends.follow("ann", "x" * 65, True), "TOO_LONG"),
        (a.friends.follow("ann", "nobody", True), "UNKNOWN_PLAYER"),
        (a.friends.block("ann", "ann", True), "FRIEND_SELF"),
        (a.friends.challenge("ann", gateway_pb2.ChallengeRequest(player_id="bob")),
         "CHALLENGE_NOT_FOLLOWED"),
        (a.friends.challenge("ann", gateway_pb2.ChallengeRequest(player_id="ann")), "FRIEND_SELF"),
        (a.friends.answer("ann", gateway_pb2.AnswerChallengeRequest(challenge_id="")), "MISSING"),
        (a.friends.answer("ann", gateway_pb2.AnswerChallengeRequest(challenge_id="nope")),
         "UNKNOWN_CHALLENGE"),
    ]  # fmt: skip
    for call, code in cases:
        with pytest.raises(ServiceError) as refused:
            await call
        assert refused.value.code == code
    assert await _keys(redis) == before and lobby.tables == {}

    # Bounded: BG_FRIENDS_MAX (3 here) follows; challenges out at once.
    for other in ("bob", "cid", "dee"):
        await a.friends.follow("ann", other, True)
    with pytest.raises(ServiceError) as full:
        await a.friends.follow("ann", "eve", True)
    assert full.value.code == "FOLLOWS_FULL"
    await a.friends.follow("ann", "bob", True)  # following again is no change
    for _ in range(5):
        await a.friends.challenge("ann", gateway_pb2.ChallengeRequest(player_id="bob"))
    tables = len(lobby.tables)
    with pytest.raises(ServiceError) as many:
        await a.friends.challenge("ann", gateway_pb2.ChallengeRequest(player_id="bob"))
    assert many.value.code == "CHALLENGES_FULL" and len(lobby.tables) == tables


async def test_a_block_ends_follows_and_challenges_and_hides_chat_on_the_other_gateway(
    two: list[Gateway], lobby: Lobby, redis: Any
) -> None:
    a, b = two
    await a.friends.follow("ann", "bob", True)
    await b.friends.follow("bob", "ann", True)
    pending = await b.friends.challenge("bob", gateway_pb2.ChallengeRequest(player_id="ann"))
    table_id = "tchat1"
    lobby.tables[table_id] = matchmaking_pb2.LobbyTable(table_id=table_id)

    # ann reads the table's chat on gateway a; bob speaks on gateway b.
    heard: asyncio.Queue[Any] = asyncio.Queue()
    await a.feed.subscribe(table_id)
    a.chat.listen(Listener(table_id, "ann", True, heard.put_nowait))

    say = gateway_pb2.SendChatRequest(table_id=table_id, channel=TABLE, text="hi")
    await b.room.send("bob", say)
    assert (await asyncio.wait_for(heard.get(), 5)).chat.text == "hi"

    view = await a.friends.block("ann", "bob", True)
    assert list(view.blocked) == ["bob"] and list(view.friends) == []
    assert list((await b.friends.view("bob")).friends) == []  # his follow of her ended
    assert [c.status for c in (await b.friends.view("bob")).sent] == ["declined"]
    assert lobby.tables[pending.table.table_id].status == "closed"

    say.text = "still there?"
    await b.room.send("bob", say)
    await asyncio.sleep(0.5)
    assert heard.empty()  # hidden from her, on her gateway
    assert [m.text for m in await a.room.history("ann", table_id)] == []
    assert [m.text for m in await b.room.history("bob", table_id)] == [
        "hi", "still there?",
    ]  # fmt: skip

    tables = len(lobby.tables)
    for call in (
        b.friends.follow("bob", "ann", True),
        b.friends.challenge("bob", gateway_pb2.ChallengeRequest(player_id="ann")),
        a.friends.follow("ann", "bob", True),  # she must unblock first
    ):
        with pytest.raises(ServiceError) as refused:
            await call
        # Issue 41, item 12: a block is said as such, though it also ended the follow.
        assert refused.value.code == "FRIEND_BLOCKED"
    assert len(lobby.tables) == tables  # no challenge table opened

    await a.friends.block("ann", "bob", False)
    assert [m.text for m in await a.room.history("ann", table_id)] == [
        "hi", "still there?",
    ]  # fmt: skip
    await b.friends.follow("bob", "ann", True)  # allowed again
