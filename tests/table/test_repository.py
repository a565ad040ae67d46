"""Issue 17: the table core's port, one contract for both stores. The in-memory store the unit
tests use answers as the Redis store's Lua scripts do (on a single Valkey and a Valkey
Cluster, the scripts by redis-py or by the lean client): created once, compare-and-set on seq,
a command id applied once, events in order, deadlines, records, preferences."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from engine import profiles
from engine.machine import new_match
from engine.state import TableState
from services.common.clock import now_ms
from services.common.lean_redis import LeanRedis
from services.table.adapters.redis_store import TableStore
from services.table.ports import Commit, MatchRecord, TableMeta, TableRepository
from tests.helpers import flushed_client
from tests.table.driver import deadline_of
from tests.table.memory_store import MemoryTableStore

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "valkey", "valkey-lean", "valkey-cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[TableRepository]:
    """valkey-lean: the scripts by the lean client, as a table replica sends them on a
    standalone Redis (services/common/lean_redis.py)."""
    if request.param == "memory":
        yield MemoryTableStore()
        return
    client = await flushed_client(request, request.param.removesuffix("-lean"))
    lean = None
    if request.param == "valkey-lean":
        lean = LeanRedis(request.getfixturevalue("valkey_url"))
    yield TableStore(client, lean)
    if lean is not None:
        await lean.aclose()
    await client.aclose()


def _now(step: int) -> int:
    """A commit's time: the wall clock (the store's, on this one host; the commit refuses one
    ahead of it or far behind), a few ms apart per step."""
    return now_ms() - 100 + step


def _state() -> TableState:
    return new_match(profiles.casual(1), b"\x01" * 16, 0).state


META = TableMeta(table_id="t1", match_id="m1", player_ids=["ann", "bob"])


async def test_a_table_is_created_once_then_moves_by_compare_and_set(
    store: TableRepository,
) -> None:
    state = _state()
    made = await store.commit(
        Commit("t1", None, state, 5000, "", [b"e1", b"e2"], _now(1), meta=META)
    )
    assert (made.status, made.seq) == ("OK", 2)
    again = await store.commit(Commit("t1", None, state, None, "", [b"x"], _now(2)))
    assert (again.status, again.seq) == ("EXISTS", 2)
    stale = await store.commit(Commit("t1", 1, state, None, "", [b"x"], _now(3)))
    assert (stale.status, stale.seq) == ("CONFLICT", 2)
    missing = await store.commit(Commit("t9", 0, state, None, "", [b"x"], _now(3)))
    assert missing.status == "NO_TABLE"
    moved = await store.commit(Commit("t1", 2, state, None, "0:c1", [b"e3"], _now(4)))
    assert (moved.status, moved.seq) == ("OK", 3)
    loaded = await store.load("t1")
    assert loaded is not None and (loaded.seq, loaded.meta, loaded.relayed) == (3, META, 0)
    assert loaded.state == state
    assert await store.load("t9") is None
    assert await store.events("t1", 0) == [(1, b"e1"), (2, b"e2"), (3, b"e3")]
    assert await store.events("t1", 1, count=1) == [(2, b"e2")]


async def test_a_command_id_is_applied_once(store: TableRepository) -> None:
    state = _state()
    await store.commit(Commit("t1", None, state, None, "", [b"e1"], _now(1)))
    first = await store.commit(Commit("t1", 1, state, None, "1:abc", [b"e2", b"e3"], _now(2)))
    assert (first.status, first.seq) == ("OK", 3)
    dup = await store.commit(
        Commit("t1", 3, state, None, "1:abc", [b"x"], _now(3))
    )  # a retry, seq moved on
    assert (dup.status, dup.seq, dup.count) == ("DUP", 3, 2)
    assert await store.command_result("t1", "1:abc") == (3, 2)
    assert await store.command_result("t1", "0:abc") is None  # ids are per seat (I-34)
    assert [s for s, _ in await store.events("t1", 0)] == [1, 2, 3]


async def test_deadlines_records_and_preferences(store: TableRepository) -> None:
    state = _state()
    await store.commit(Commit("t1", None, state, 9000, "", [b"e1"], _now(1)))
    assert await deadline_of(store, "t1") == 9000
    assert not await store.reschedule("t1", 0, 100)  # stale seq: left alone
    assert await store.reschedule("t1", 1, 7000) and await deadline_of(store, "t1") == 7000
    record = MatchRecord(
        "t1", "m1", ("ann", "bob"), "wagered", "00" * 16, "f" * 64, ((3, 1), (6, 6)),
        winner=1, end_reason="resign", score=(0, 1), cube=2, boosts=((1, 0, 1),),
    )  # fmt: skip
    await store.commit(Commit("t1", 1, state, None, "", [b"e2"], _now(2), record=record))
    assert await deadline_of(store, "t1") is None
    assert await store.get_record("t1", "m1") == record
    assert await store.get_record("t1", "m2") is None
    await store.commit(Commit("t1", 2, state, 100, "", [], _now(3)))
    await store.unschedule("t1")
    assert await deadline_of(store, "t1") is None
    await store.set_prefs("alice", auto_roll="1")
    await store.set_prefs("alice", theme="dark")
    assert await store.get_prefs("alice") == {"auto_roll": "1", "theme": "dark"}
    assert await store.get_prefs("bob") == {}
