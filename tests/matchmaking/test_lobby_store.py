"""Issue 17: the lobby's port, one contract for both stores. The in-memory store the lobby's
unit tests use answers as the Redis store does (its compare-and-set script and its indexes, on a
single Valkey and a Valkey Cluster)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from services.matchmaking.adapters.redis_lobby import RedisLobbyStore
from services.matchmaking.ports import LobbyRepository
from tests.helpers import flushed_client
from tests.matchmaking.memory_lobby import MemoryLobbyStore

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "valkey", "valkey-cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[LobbyRepository]:
    if request.param == "memory":
        yield MemoryLobbyStore()
        return
    client = await flushed_client(request, request.param)
    yield RedisLobbyStore(client)
    await client.aclose()


async def test_documents_change_by_compare_and_set_keeping_their_indexes(
    store: LobbyRepository,
) -> None:
    await store.create("t1", '{"v": 1}', 100)
    await store.create("t2", '{"v": 1}', 200)
    await store.create("t3", '{"v": 1}', None)  # private: never listed
    assert await store.read("t1") == '{"v": 1}' and await store.read("t9") is None
    assert await store.open_tables(10) == ["t2", "t1"]  # newest first
    assert not await store.save_if_unchanged("t1", '{"v": 0}', '{"v": 2}', None, None)
    assert await store.read("t1") == '{"v": 1}'  # a stale read writes nothing
    assert await store.save_if_unchanged("t1", '{"v": 1}', '{"v": 2}', None, 5000)
    assert await store.read("t1") == '{"v": 2}'
    assert await store.open_tables(10) == ["t2"]  # no longer listed
    assert (
        await store.dealing_before(6000, 10) == ["t1"] and await store.dealing_before(10, 10) == []
    )
    assert await store.save_if_unchanged("t1", '{"v": 2}', '{"v": 3}', None, None)
    assert await store.dealing_before(6000, 10) == []
    await store.drop_open("t2")
    assert await store.open_tables(10) == []


async def test_codes_player_sets_live_tables_and_scored_pairings(store: LobbyRepository) -> None:
    code = "C" + uuid.uuid4().hex[:5].upper()
    assert await store.reserve_code(code, "t1", 60)
    assert not await store.reserve_code(code, "t2", 60)  # taken
    assert await store.code_table(code) == "t1" and await store.code_table("NOPE99") is None
    await store.add_player_table("seated", "ann", "t1")
    await store.add_player_table("seated", "ann", "t2")
    await store.add_player_table("hosting", "ann", "t2")
    assert await store.player_tables("seated", "ann") == ["t1", "t2"]
    await store.drop_player_table("seated", "ann", "t1")
    assert await store.player_tables("seated", "ann") == ["t2"]
    assert await store.player_tables("hosting", "ann") == ["t2"]
    assert await store.player_tables("seated", "bob") == []
    await store.mark_live("t1", 1000)
    await store.mark_live("t2", 3000)
    assert await store.live_tables(0, 10) == ["t2", "t1"]
    assert await store.live_tables(2000, 10) == ["t2"]  # t1 dealt too long ago: dropped
    await store.drop_live("t2")
    assert await store.live_tables(0, 10) == []
    await store.set_scored_table("ann", "t7", 60)
    assert await store.scored_table("ann") == "t7"
    await store.clear_scored_table("ann")
    assert await store.scored_table("ann") is None


async def test_quick_match_queues_pair_in_arrival_order(store: LobbyRepository) -> None:
    queue = "lobby:quick:" + uuid.uuid4().hex
    assert await store.pop_waiting(queue) is None
    assert await store.enqueue_if_empty(queue, "t1")
    assert not await store.enqueue_if_empty(queue, "t2")  # someone waits: pair instead
    await store.push_waiting(queue, "t3")
    assert [await store.pop_waiting(queue) for _ in range(3)] == ["t1", "t3", None]


async def test_holds_change_only_from_what_they_hold(store: LobbyRepository) -> None:
    """Issue 24: a player's holds (a request id's answer, the wagered match they sit at) are set
    when free, when they hold the value given to replace, or the value itself; released only by
    their holder."""
    assert await store.hold("wagered", "ann", "match", "t1|m1", "", 60) is None
    assert await store.hold("wagered", "ann", "match", "t1|m1", "", 60) is None  # again: ours
    assert await store.hold("wagered", "ann", "match", "t2|m2", "", 60) == "t1|m1"
    assert await store.hold("wagered", "ann", "match", "t2|m2", "t9|m9", 60) == "t1|m1"
    assert await store.hold("wagered", "ann", "match", "t2|m2", "t1|m1", 60) is None
    assert await store.held("wagered", "ann", "match") == "t2|m2"
    assert await store.hold("wagered", "bob", "match", "t1|m1", "", 60) is None  # per player
    await store.release("wagered", "ann", "match", "t1|m1")  # not what it holds: kept
    assert await store.held("wagered", "ann", "match") == "t2|m2"
    await store.release("wagered", "ann", "match", "t2|m2")
    assert await store.held("wagered", "ann", "match") is None
    assert await store.hold("request", "ann", "match", "x", "", 60) is None  # kinds apart
    assert await store.held("wagered", "ann", "match") is None
