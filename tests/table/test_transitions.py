"""The table core's one transition helper (issue 26, item 3): a step decided on a table that
another replica changed before the commit is decided again on the new state, counted as a
compare-and-set conflict; a table gone under a commit answers UNKNOWN_TABLE and leaves the
cache without it. Two cores on one in-memory store, as two replicas on one Redis."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from engine import commands as c
from services.common.errors import NotFound
from services.table.ports import Commit, CommitResult
from services.table.table_core import TableCore
from tests.table.driver import options
from tests.table.fakes import FakeWallet
from tests.table.memory_store import MemoryTableStore

P = ["alice", "bob"]
WAGERED = options("wagered", match_length=1, bet=100)


class RacedStore(MemoryTableStore):
    """Runs `before` (another replica's change) just ahead of the next commit it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.before: Callable[[], Awaitable[None]] | None = None

    async def commit(self, c: Commit) -> CommitResult:
        if self.before is not None:
            rival, self.before = self.before, None
            await rival()
        return await super().commit(c)


def _conflicts(core: TableCore) -> float:
    return float(core.metrics.cas_conflicts._value.get())


@pytest.fixture
def store() -> RacedStore:
    return RacedStore()


def _core(store: RacedStore) -> TableCore:
    return TableCore(store, FakeWallet(alice=10_000, bob=10_000), clock_scale=0.01)


async def test_a_create_that_lost_to_the_same_deal_answers_the_winners_match(
    store: RacedStore,
) -> None:
    here, there = _core(store), _core(store)
    won: list[str] = []

    async def rival() -> None:
        fingerprint, _, _ = await there.create_match("t1", "m1", P, WAGERED)
        won.append(fingerprint)

    store.before = rival
    fingerprint, seq, existed = await here.create_match("t1", "m1", P, WAGERED)
    assert existed and fingerprint == won[0]  # one match, the winner's (its seed, its dice)
    assert seq == (await store.load("t1")).seq  # type: ignore[union-attr]
    assert _conflicts(here) == 1 and _conflicts(there) == 0


async def test_a_command_on_a_stale_cache_is_redone_on_the_new_state(store: RacedStore) -> None:
    here, there = _core(store), _core(store)
    await here.create_match("t1", "m1", P, WAGERED)
    await here.view("t1", P[0])  # cached here at the create's seq
    other_seq: list[int] = []

    async def rival() -> None:
        done = await there.submit("t1", P[1], 1, "b1", 0, c.SetAutoRoll(1, True))
        other_seq.append(done.seq)

    store.before = rival
    mine = await here.submit("t1", P[0], 0, "a1", 0, c.SetAutoRoll(0, True))
    assert not mine.duplicate and mine.seq > other_seq[0]  # applied after the rival's, not lost
    loaded = await store.load("t1")
    assert loaded is not None and loaded.state.match.auto_roll == (True, True)
    assert _conflicts(here) == 1


async def test_a_table_gone_under_a_commit_is_unknown_and_leaves_the_cache(
    store: RacedStore,
) -> None:
    core = _core(store)
    await core.create_match("t1", "m1", P, WAGERED)
    await core.view("t1", P[0])
    assert core.cache.get("t1") is not None

    async def expire() -> None:
        del store.tables["t1"]

    store.before = expire
    with pytest.raises(NotFound) as raised:
        await core.submit("t1", P[0], 0, "a1", 0, c.SetAutoRoll(0, True))
    assert raised.value.code == "UNKNOWN_TABLE"
    assert core.cache.get("t1") is None
    assert _conflicts(core) == 0  # a gone table is no race lost
