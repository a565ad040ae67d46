"""Issue 24, item 9: a retried call that seats a player answers what the first call did (a
client request id), and a player sits at one wagered match in play at a time (W-1,
docs/protocol.md), held at the deal. On the in-memory lobby store, and through the Redis
store's hold scripts on a single Valkey and a Valkey Cluster."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bg.table.v1 import table_pb2
from services.common.errors import ServiceError
from services.matchmaking.adapters.redis_lobby import RedisLobbyStore
from services.matchmaking.request_ids import Retry
from services.matchmaking.table_documents import LobbyStatus, Table
from tests.helpers import flushed_client
from tests.matchmaking.memory_lobby import MemoryLobbyStore
from tests.matchmaking.test_lobby import WAGERED, Parts, _parts

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "valkey", "valkey-cluster"])
async def lobby(request: pytest.FixtureRequest) -> AsyncIterator[Parts]:
    if request.param == "memory":
        yield _parts(MemoryLobbyStore())
        return
    client = await flushed_client(request, request.param)
    yield _parts(RedisLobbyStore(client))
    await client.aclose()


BET200 = table_pb2.TableOptions(profile="wagered", match_length=1, bet=200)


def retry(player: str, request_id: str, fingerprint: str = "f1") -> Retry:
    return Retry(player, request_id, fingerprint)


async def quick(parts: Parts, player: str, request_id: str = "", fp: str = "f1") -> Table:
    lb = parts[0]
    key = retry(player, request_id, fp) if request_id else None
    return await lb.once(key, lambda: lb.quick_match(player, BET200, key))


async def test_a_retried_quick_match_answers_the_first_table_and_stakes_once(
    lobby: Parts,
) -> None:
    """The issue's repro: A waits; B deals A against B; A's retry (its first answer lost) gets
    that dealt table, not a new open one; C then waits alone instead of meeting A."""
    _, wallet, _ = lobby
    waiting = await quick(lobby, "ann", "q1")
    dealt = await quick(lobby, "bob")
    assert dealt.table_id == waiting.table_id and dealt.status == "dealt"
    again = await quick(lobby, "ann", "q1")
    assert again.table_id == waiting.table_id and again.status == "dealt"
    carol = await quick(lobby, "cat")
    assert carol.status == "open" and carol.player_ids == ["cat", ""]
    assert [m for m, (players, _) in wallet.escrows.items() if "ann" in players] == [dealt.match_id]


async def test_without_a_request_id_a_second_wagered_call_is_refused_while_one_is_in_play(
    lobby: Parts,
) -> None:
    lb, wallet, tables = lobby
    await quick(lobby, "ann")
    dealt = await quick(lobby, "bob")
    for attempt in (
        lb.quick_match("ann", BET200),
        lb.create("ann", WAGERED, public=True),
        lb.quick_match("bob", WAGERED),
    ):
        with pytest.raises(ServiceError) as refused:
            await attempt
        assert refused.value.code == "IN_ANOTHER_MATCH"
        assert refused.value.metadata["table_id"] == dealt.table_id
    casual = await lb.quick_match("ann", table_pb2.TableOptions(profile="casual"))
    assert casual.status == "open"  # W-1 holds wagered matches only
    tables.over.add(dealt.match_id)
    after = await lb.quick_match("ann", BET200)  # the match is over: free again
    assert after.status == "open" and len(wallet.escrows) == 1


async def test_the_deal_holds_one_wagered_match_per_player(lobby: Parts) -> None:
    """Two wagered party tables of one host, both joined: the first deal escrows; the second
    closes with the reason and takes nothing (W-1); once the first match ends a third deals."""
    lb, wallet, tables = lobby
    one = await lb.create("ann", WAGERED, public=False)
    two = await lb.create("ann", WAGERED, public=False)
    first = await lb.join("bob", one.table_id)
    assert first.status == "dealt"
    second = await lb.join("cat", two.table_id)
    assert second.status == "closed" and second.close_reason == "in_another_match:ann"
    assert list(wallet.escrows) == [first.match_id] and tables.created == [first.match_id]
    tables.over.add(first.match_id)
    three = await lb.create("ann", WAGERED, public=False)
    dealt = await lb.join("cat", three.table_id)
    assert dealt.status == "dealt" and len(wallet.escrows) == 2


async def test_a_rematch_takes_over_its_tables_hold(lobby: Parts) -> None:
    lb, wallet, tables = lobby
    table = await lb.create("ann", WAGERED, public=False)
    first = await lb.join("bob", table.table_id)
    tables.over.add(first.match_id)
    tables.agreed = True
    again = await lb.rematch("bob", table.table_id)
    assert again.status == "dealt" and set(wallet.escrows) == {first.match_id, again.match_id}


async def test_a_deal_that_cannot_cover_releases_its_holds(lobby: Parts) -> None:
    lb, _, _ = lobby
    table = await lb.create("ann", WAGERED, public=False)
    closed = await lb.join("poor", table.table_id)
    assert closed.close_reason == "cannot_cover:poor"
    other = await lb.create("ann", WAGERED, public=False)
    assert (await lb.join("bob", other.table_id)).status == "dealt"  # ann was not held


async def test_a_request_id_reused_for_another_request_is_refused(lobby: Parts) -> None:
    await quick(lobby, "ann", "q1", fp="f1")
    with pytest.raises(ServiceError) as reused:
        await quick(lobby, "ann", "q1", fp="f2")
    assert reused.value.code == "REQUEST_ID_REUSED" and reused.value.field == "request_id"
    other = await quick(lobby, "bob", "q1", fp="f2")  # ids are per player
    assert other.status == "dealt"


async def test_racing_calls_with_one_request_id_seat_the_player_once(lobby: Parts) -> None:
    lb, _, _ = lobby

    async def one() -> Table:
        key = retry("ann", "q9")
        return await lb.once(key, lambda: lb.quick_match("ann", BET200, key))

    answers = await asyncio.gather(one(), one(), one())
    assert len({t.table_id for t in answers}) == 1
    assert len(await lb.player_tables("ann")) == 1


async def test_a_first_call_that_seated_nobody_runs_again(lobby: Parts) -> None:
    """A refusal changed nothing: the retry under the same id is a fresh call."""
    lb, _, _ = lobby
    with pytest.raises(ServiceError) as refused:
        await quick(lobby, "pauper", "q1")
    assert refused.value.code == "INSUFFICIENT_FUNDS"
    key = retry("ann", "c1")
    made = await lb.once(key, lambda: lb.create("ann", WAGERED, public=True, retry=key))
    again = await lb.once(retry("ann", "c1"), lambda: lb.create("ann", WAGERED, public=True))
    assert again.table_id == made.table_id and again.status is LobbyStatus.OPEN
    assert len(await lb.list_open()) == 1


async def test_a_retry_while_the_first_call_pairs_elsewhere_answers_where_it_sat(
    lobby: Parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ann's first call makes her table, but before it queues Bob's arrives first, so she is
    paired at Bob's and her own is closed: her retry, sent in that window, answers Bob's table
    (the one she plays at), never the one left behind."""
    lb = lobby[0]
    create = lb.create
    retried: list[asyncio.Task[Table]] = []

    async def create_then_bob_queues(player: str, *args: object, **kwargs: object) -> Table:
        table = await create(player, *args, **kwargs)  # type: ignore[arg-type]
        if player == "ann" and not retried:
            await quick(lobby, "bob")  # Bob finds the queue empty: his table waits
            retried.append(asyncio.create_task(quick(lobby, "ann", "q1")))
            await asyncio.sleep(0.1)  # the retry looks while the first call is mid-pairing
        return table

    monkeypatch.setattr(lb, "create", create_then_bob_queues)
    first = await quick(lobby, "ann", "q1")
    again = await asyncio.wait_for(retried[0], 20)
    assert first.host_id == "bob" and first.status == "dealt"
    # The same table, as it stood when the retry read it (the deal may have been under way).
    assert again.table_id == first.table_id and "ann" in again.player_ids
    mine = await lb.store.player_tables("seated", "ann")
    left = [t for t in [await lb.get(i) for i in mine] if t.table_id != first.table_id]
    assert left and all(t.status == LobbyStatus.CLOSED for t in left)  # hers, not left open
