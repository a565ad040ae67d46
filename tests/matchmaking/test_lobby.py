"""The lobby with fakes behind its ports: its unit tests on the in-memory store (issue 17); the
races (the last seat, players arriving together) on a real Valkey and Valkey Cluster too, where
the store's scripts decide them. The Redis store itself: tests/matchmaking/test_lobby_store.py."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest

from bg.table.v1 import table_pb2
from services.common.errors import ServiceError
from services.contracts.redis_keys import RESTRICTED
from services.matchmaking import deals as deals_module
from services.matchmaking.adapters.redis_lobby import RedisLobbyStore
from services.matchmaking.lobby import Lobby
from services.matchmaking.ports import LobbyRepository
from services.matchmaking.table_documents import CODE_ALPHABET, LobbyStatus, normalize_code
from tests.helpers import flushed_client
from tests.matchmaking.memory_lobby import MemoryLobbyStore

pytestmark = pytest.mark.integration


class FakeWallet:
    def __init__(self, short: set[str] | None = None, poor: set[str] | None = None) -> None:
        self.short = short or set()  # their escrow fails (spent between joining and the deal)
        self.poor = poor or set()  # their balance is 0 from the start
        self.escrows: dict[str, tuple[list[str], int]] = {}
        self.refunded: list[str] = []
        self.down = False

    async def refund(self, key: str, match_id: str) -> None:
        if self.down:
            raise ServiceError("UPSTREAM_UNAVAILABLE", "UNAVAILABLE: wallet down")
        if match_id not in self.escrows:
            raise ServiceError("UNKNOWN_MATCH", match_id)
        if match_id not in self.refunded:
            self.refunded.append(match_id)

    async def balance(self, player_id: str) -> int:
        return 0 if player_id in self.poor else 1_000_000

    async def escrow(self, key: str, match_id: str, players: list[str], stake: int) -> None:
        short = [p for p in players if p in self.short]
        if short:
            err = ServiceError("INSUFFICIENT_FUNDS", "short")
            err.metadata = {"players": ",".join(short)}
            raise err
        self.escrows.setdefault(match_id, (players, stake))


class FakeTables:
    def __init__(self) -> None:
        self.created: list[str] = []
        self.left: list[tuple[str, str]] = []
        self.agreed = False
        self.down = False
        self.refuse = False
        self.lost_answers = 0  # creates that happen but whose answer never arrives
        self.over: set[str] = set()  # matches that have ended
        self.winners: dict[str, str] = {}  # match -> its winner ("" = closed undecided)
        self.creates = 0  # create calls, repeats included

    async def create_match(
        self, table_id: str, match_id: str, players: list[str], options: table_pb2.TableOptions
    ) -> str:
        if self.down:
            raise ServiceError(
                "UPSTREAM_UNAVAILABLE", "no table replica", status=grpc.StatusCode.UNAVAILABLE
            )
        if self.refuse:
            raise ServiceError("INVALID_OPTIONS", "the table service refuses these options")
        self.creates += 1
        if self.lost_answers:
            self.lost_answers -= 1
            if match_id not in self.created:
                self.created.append(match_id)
            raise ServiceError(
                "UPSTREAM_UNAVAILABLE", "timed out", status=grpc.StatusCode.DEADLINE_EXCEEDED
            )
        if match_id not in self.created:
            self.created.append(match_id)
        return "f" * 64

    async def leave(self, table_id: str, player_id: str, seat: int) -> None:
        self.left.append((table_id, player_id))

    async def rematch_agreed(self, table_id: str, player_id: str) -> bool:
        return self.agreed

    async def match_exists(self, table_id: str, match_id: str) -> bool:
        if self.down:
            raise ServiceError(
                "UPSTREAM_UNAVAILABLE", "no table replica", status=grpc.StatusCode.UNAVAILABLE
            )
        return match_id in self.created

    async def match_in_play(self, table_id: str, match_id: str) -> bool:
        return match_id in self.created and match_id not in self.over

    async def match_winner(self, table_id: str, match_id: str) -> str | None:
        return self.winners.get(match_id)


Parts = tuple[Lobby, "FakeWallet", "FakeTables"]  # the lobby and its fakes


def _parts(store: LobbyRepository) -> Parts:
    wallet, tables = FakeWallet(short={"poor"}, poor={"pauper"}), FakeTables()
    return Lobby(store, wallet, tables), wallet, tables


@pytest.fixture
def lobby() -> Parts:
    return _parts(MemoryLobbyStore())


@pytest.fixture(params=["memory", "valkey", "valkey-cluster"])
async def racing_lobby(request: pytest.FixtureRequest) -> AsyncIterator[Parts]:
    """Races on each store: in memory, and through the Redis store's scripts on a single Valkey
    and a Valkey Cluster (the lobby's scripts keep to one slot)."""
    if request.param == "memory":
        yield _parts(MemoryLobbyStore())
        return
    client = await flushed_client(request, request.param)
    yield _parts(RedisLobbyStore(client))
    await client.aclose()


WAGERED = table_pb2.TableOptions(profile="wagered", match_length=3, bet=500)


async def test_party_code_join_deals_a_wagered_table(lobby: Parts) -> None:
    lb, wallet, tables = lobby
    table = await lb.create("ann", WAGERED, public=True)
    assert len(table.code) == 6 and set(table.code) <= set(CODE_ALPHABET)
    assert [t.table_id for t in await lb.list_open(profile="wagered")] == [table.table_id]
    assert (await lb.get(table.table_id)).status is LobbyStatus.OPEN  # typed as stored
    dealt = await lb.join_by_code("bob", f"https://play.example/join/{table.code.lower()}")
    assert dealt.status == "dealt" and dealt.player_ids == ["ann", "bob"]  # the wire's value
    assert (await lb.get(table.table_id)).status is LobbyStatus.DEALT
    assert wallet.escrows[dealt.match_id] == (["ann", "bob"], 500)
    assert tables.created == [dealt.match_id]
    assert await lb.list_open() == []  # no longer open
    with pytest.raises(ServiceError) as full:
        await lb.join("carol", table.table_id)
    assert full.value.code == "TABLE_NOT_OPEN"


async def test_a_player_who_cannot_cover_closes_the_table_and_nothing_is_taken(
    lobby: Parts,
) -> None:
    """I-10: the balance covered the bet when they sat, not at the deal (spent meanwhile)."""
    lb, wallet, tables = lobby
    table = await lb.create("ann", WAGERED, public=False)
    closed = await lb.join("poor", table.table_id)
    assert closed.status == "closed" and closed.close_reason == "cannot_cover:poor"
    assert wallet.escrows == {} and tables.created == []


async def test_a_wagered_table_is_refused_at_once_to_whoever_cannot_cover_it(lobby: Parts) -> None:
    lb, _, _ = lobby
    for attempt in (
        lb.create("pauper", WAGERED, public=True),
        lb.quick_match("pauper", WAGERED),
    ):
        with pytest.raises(ServiceError) as refused:
            await attempt
        assert refused.value.code == "INSUFFICIENT_FUNDS" and refused.value.field == "options.bet"
    table = await lb.create("ann", WAGERED, public=True)
    with pytest.raises(ServiceError) as refused:
        await lb.join("pauper", table.table_id)
    assert refused.value.code == "INSUFFICIENT_FUNDS"
    after = await lb.get(table.table_id)
    assert after.status == "open" and after.player_ids == ["ann", ""]  # nothing changed
    assert [t.table_id for t in await lb.list_open()] == [table.table_id]
    casual = await lb.create("pauper", table_pb2.TableOptions(profile="casual"), public=False)
    assert casual.status == "open"  # no stake, no check


async def test_out_of_range_options_name_the_field(lobby: Parts) -> None:
    lb, _, _ = lobby
    for opts, field in (
        (table_pb2.TableOptions(profile="wagered", bet=2100), "bet"),
        (table_pb2.TableOptions(profile="wagered", match_length=4, bet=100), "match_length"),
        (table_pb2.TableOptions(profile="scored", move_time_s=601), "move_time_s"),
        (table_pb2.TableOptions(profile="casual", level="hard"), "level"),
        # Issue 29: only a tournament's director deals its matches (no bet, no escrow).
        (table_pb2.TableOptions(profile="wagered", tournament=True), "tournament"),
    ):
        with pytest.raises(ServiceError) as err:
            await lb.create("ann", opts, public=True)
        assert err.value.field == field
    with pytest.raises(ServiceError) as quick:
        await lb.quick_match("ann", table_pb2.TableOptions(profile="casual", tournament=True))
    assert quick.value.field == "tournament"


async def test_quick_match_pairs_identical_requests_only(lobby: Parts) -> None:
    lb, _, tables = lobby
    scored3 = table_pb2.TableOptions(profile="scored", match_length=3)
    waiting = await lb.quick_match("ann", scored3)
    assert waiting.status == "open"
    other = await lb.quick_match("carl", table_pb2.TableOptions(profile="scored", match_length=5))
    assert other.table_id != waiting.table_id
    paired = await lb.quick_match("bob", scored3)
    assert paired.table_id == waiting.table_id and paired.status == "dealt"
    assert tables.created == [paired.match_id]


async def test_casual_waits_for_the_host_to_start(lobby: Parts) -> None:
    lb, _, tables = lobby
    table = await lb.create("ann", table_pb2.TableOptions(profile="casual"), public=False)
    seated = await lb.join("bob", table.table_id)
    assert seated.status == "open" and tables.created == []
    with pytest.raises(ServiceError) as err:
        await lb.start("bob", table.table_id)
    assert err.value.code == "NOT_HOST"
    assert (await lb.start("ann", table.table_id)).status == "dealt"


async def test_leaving_before_the_deal_is_free_and_after_it_leaves_the_match(lobby: Parts) -> None:
    lb, _, tables = lobby
    table = await lb.create("ann", table_pb2.TableOptions(profile="casual"), public=True)
    await lb.join("bob", table.table_id)
    left = await lb.leave("bob", table.table_id)
    assert left.player_ids == ["ann", ""] and left.status == "open"
    dealt_table = await lb.create("cat", WAGERED, public=False)
    await lb.join("dan", dealt_table.table_id)
    await lb.leave("dan", dealt_table.table_id)
    assert tables.left == [(dealt_table.table_id, "dan")]


async def test_i18_starting_a_second_scored_game_leaves_the_first(lobby: Parts) -> None:
    lb, _, tables = lobby
    first = await lb.create("ann", table_pb2.TableOptions(profile="scored"), public=False)
    await lb.join("bob", first.table_id)
    await lb.create("ann", table_pb2.TableOptions(profile="scored"), public=False)
    assert tables.left == [(first.table_id, "ann")]


async def test_two_players_racing_for_the_last_seat(racing_lobby: Parts) -> None:
    lb, _, _ = racing_lobby
    table = await lb.create("ann", table_pb2.TableOptions(profile="casual"), public=False)
    results = await asyncio.gather(
        *(lb.join(p, table.table_id) for p in ("b1", "b2", "b3")), return_exceptions=True
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(winners) == 1
    assert all(
        isinstance(r, ServiceError) and r.code == "TABLE_FULL" for r in results if r not in winners
    )


async def test_vs_cpu_is_dealt_at_once_with_a_computer_seat(lobby: Parts) -> None:
    """Issue 60, item 7: a public game against the computer is watchable and live (I-35), never
    listed to join (its seats are full); a private one is neither."""
    lb, _, _ = lobby
    vs_cpu = table_pb2.TableOptions(profile="casual", level="normal")
    table = await lb.create("ann", vs_cpu, public=True)
    assert table.status == "dealt" and table.player_ids[1].startswith("cpu-normal-")
    assert table.watchable
    assert [t.table_id for t in await lb.list_live()] == [table.table_id]
    assert await lb.list_open() == []
    private = await lb.create("bob", vs_cpu, public=False)
    assert not private.watchable
    assert private.table_id not in [t.table_id for t in await lb.list_live()]


async def test_rematch_needs_agreement(lobby: Parts) -> None:
    lb, wallet, tables = lobby
    table = await lb.create("ann", WAGERED, public=False)
    first = await lb.join("bob", table.table_id)
    with pytest.raises(ServiceError) as err:
        await lb.rematch("ann", table.table_id)
    assert err.value.code == "NO_REMATCH"
    tables.agreed = True
    again = await lb.rematch("bob", table.table_id)
    assert again.match_id != first.match_id and again.status == "dealt"
    assert set(wallet.escrows) == {first.match_id, again.match_id}  # I-32: a new escrow


def test_codes_are_normalised_and_checked() -> None:
    assert normalize_code(" abc234 ") == "ABC234"
    with pytest.raises(ServiceError):
        normalize_code("ABC10O")  # ambiguous characters are not in the alphabet


async def test_a_deal_whose_table_cannot_be_created_is_refunded_and_closed(lobby: Parts) -> None:
    """Issue 13 (saga): the table service refuses the match: the escrow is refunded, the table
    closes, and leaving it works."""
    lb, wallet, tables = lobby
    tables.refuse = True
    table = await lb.create("ann", WAGERED, public=False)
    closed = await lb.join("bob", table.table_id)
    assert closed.status == "closed" and closed.close_reason == "deal_failed"
    assert list(wallet.escrows) == [closed.match_id] and wallet.refunded == [closed.match_id]
    assert tables.created == []
    left = await lb.leave("bob", table.table_id)
    assert left.status == "closed"


async def test_a_create_whose_answer_was_lost_is_never_refunded_while_its_match_is_played(
    lobby: Parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The create happened but its answer was lost (a replica killed, a timeout): undoing the
    deal then would refund a match that is played (the chaos test caught a refunded escrow whose
    table said PLAYING). The deal stays open; the next call drives it on; past the resume window
    the sweeper completes it because the match exists (stakes kept), and undoes a deal whose
    match was never made (stakes returned), never making a match nobody is waiting for."""
    lb, wallet, tables = lobby
    tables.lost_answers = 1
    table = await lb.create("ann", WAGERED, public=False)
    with pytest.raises(ServiceError) as err:
        await lb.join("bob", table.table_id)
    assert err.value.status == grpc.StatusCode.DEADLINE_EXCEEDED
    open_deal = await lb.get(table.table_id)
    assert open_deal.status == "dealing" and wallet.refunded == []
    driven = await lb.deal(table.table_id)  # a player's next call
    assert driven.status == "dealt" and tables.created == [driven.match_id]
    second = await lb.create("cat", WAGERED, public=False)
    tables.lost_answers = 1
    with pytest.raises(ServiceError):
        await lb.join("dan", second.table_id)
    third = await lb.create("eve", WAGERED, public=False)
    tables.down = True
    with pytest.raises(ServiceError):
        await lb.join("fay", third.table_id)  # never made
    tables.down = False
    # Every deal past its window at once (a window of 0 would leave one made in the same
    # millisecond fresh: the in-memory store is that fast).
    monkeypatch.setattr(deals_module, "DEAL_RESUME_S", -1.0)
    assert await lb.sweep_deals() == 1
    done = await lb.get(second.table_id)
    assert done.status == "dealt" and done.match_id in tables.created
    undone = await lb.get(third.table_id)
    assert undone.status == "closed" and undone.close_reason == "deal_abandoned"
    assert wallet.refunded == [undone.match_id]
    assert undone.match_id not in tables.created


async def test_a_deal_left_half_done_is_undone_after_the_resume_window(
    lobby: Parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash between the escrow and the match: within DEAL_RESUME_S the next call drives the
    deal on; after it, the sweeper (or a player leaving) refunds and closes once the table
    service says the match was never made. The wallet or the tables down meanwhile: nothing
    closes until the refund is done."""
    lb, wallet, tables = lobby
    table = await lb.create("ann", WAGERED, public=False)
    tables.down = True
    wallet.down = True  # the refund cannot happen either: the deal stays DEALING
    with pytest.raises(ServiceError):
        await lb.join("bob", table.table_id)
    stuck = await lb.get(table.table_id)
    assert stuck.status == "dealing" and list(wallet.escrows) == [stuck.match_id]
    with pytest.raises(ServiceError) as err:
        await lb.leave("bob", table.table_id)
    assert err.value.code == "DEALING"  # fresh: the deal may still complete
    # Every deal past its window at once (a window of 0 would leave one made in the same
    # millisecond fresh: the in-memory store is that fast).
    monkeypatch.setattr(deals_module, "DEAL_RESUME_S", -1.0)
    assert await lb.sweep_deals() == 0  # wallet still down: nothing closed, stakes not lost
    assert (await lb.get(table.table_id)).status == "dealing"
    wallet.down = False
    assert await lb.sweep_deals() == 0  # the tables cannot say whether the match exists: wait
    tables.down = False
    assert await lb.sweep_deals() == 1
    undone = await lb.get(table.table_id)
    assert undone.status == "closed" and undone.close_reason == "deal_abandoned"
    assert wallet.refunded == [stuck.match_id] and tables.created == []
    assert await lb.sweep_deals() == 0  # nothing left to sweep


async def test_players_arriving_together_are_all_paired(racing_lobby: Parts) -> None:
    """Quick match is atomic: six players at once make three dealt tables, nobody waits alone."""
    lb, _, tables = racing_lobby
    opts = table_pb2.TableOptions(profile="scored", match_length=1)
    players = [f"p{i}" for i in range(6)]
    got = await asyncio.gather(*(lb.quick_match(p, opts) for p in players))
    now = [await lb.get(t.table_id) for t in got]
    assert [t.status for t in now] == ["dealt"] * 6
    assert len(tables.created) == 3 and len({t.table_id for t in now}) == 3


async def test_a_casual_quick_match_deals_when_full_a_party_table_waits_for_start(
    lobby: Parts,
) -> None:
    """Strangers paired by quick match have no host to press Start: their casual table deals
    when full; a casual party table still waits for its host (I-22's Start)."""
    lb, _, tables = lobby
    casual = table_pb2.TableOptions(profile="casual", match_length=1)
    await lb.quick_match("ann", casual)
    paired = await lb.quick_match("bob", casual)
    assert paired.status == "dealt" and tables.created == [paired.match_id]
    party = await lb.create("cat", casual, public=False)
    joined = await lb.join("dan", party.table_id)
    assert joined.status == "open" and len(tables.created) == 1


async def test_a_player_has_a_bounded_number_of_tables_waiting(lobby: Parts) -> None:
    """Party tables and quick-match queues count together; a table that stops waiting (dealt,
    closed) frees its place; tables vs the CPU are dealt at once and do not count."""
    first, wallet, tables = lobby
    lb = Lobby(first.store, wallet, tables, max_open=2)
    casual = table_pb2.TableOptions(profile="casual")
    one = await lb.create("ann", casual, public=True)
    await lb.quick_match("ann", WAGERED)
    for attempt in (lb.create("ann", casual, public=False), lb.quick_match("ann", casual)):
        with pytest.raises(ServiceError) as refused:
            await attempt
        assert refused.value.code == "TOO_MANY_TABLES"
        assert refused.value.status == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (await lb.create("bob", casual, public=False)).status == "open"  # others unaffected
    cpu = table_pb2.TableOptions(profile="casual", level="easy")
    assert (await lb.create("ann", cpu, public=False)).status == "dealt"
    await lb.leave("ann", one.table_id)  # the host leaves: it stops waiting
    assert (await lb.create("ann", casual, public=False)).status == "open"


async def test_operators_see_every_table_a_player_sits_at_until_it_closes(lobby: Parts) -> None:
    """Issue 16: a ban leaves each table the player sits at; the lobby knows them: waiting,
    joined or dealt, vs the computer too; a closed one drops out."""
    lb, _, _ = lobby
    ann, bob = f"ann{uuid.uuid4().hex[:6]}", f"bob{uuid.uuid4().hex[:6]}"
    waiting = await lb.create(ann, table_pb2.TableOptions(profile="casual"), public=False)
    dealt = await lb.create(bob, WAGERED, public=False)
    await lb.join(ann, dealt.table_id)
    cpu = await lb.create(ann, table_pb2.TableOptions(profile="casual", level="easy"), False)
    assert {t.table_id for t in await lb.player_tables(ann)} == {
        waiting.table_id, dealt.table_id, cpu.table_id,
    }  # fmt: skip
    assert [t.table_id for t in await lb.player_tables(bob)] == [dealt.table_id]
    await lb.leave(ann, waiting.table_id)  # the host leaves: the table closes
    assert waiting.table_id not in [t.table_id for t in await lb.player_tables(ann)]
    with pytest.raises(ServiceError):
        await lb.player_tables("cpu-easy-x")


async def _restrict(lb: Lobby, player_id: str) -> None:
    """What the identity service's Restrict writes (services/identity/ban_list.py)."""
    if isinstance(lb.store, MemoryLobbyStore):
        lb.store.restricted_ids.add(player_id)
    else:
        await lb.store.redis.sadd(RESTRICTED, player_id)  # type: ignore[attr-defined]


async def test_a_restricted_player_plays_casual_unrated_only(racing_lobby: Parts) -> None:
    """Issue 61, item 4: restricted by an operator, a player is refused every wagered, scored or
    rated seat (create, join, quick match, rematch, a tournament) in words that say how to
    appeal; casual unrated play stays open; a table dealt after a restriction closes with nothing
    taken; the other players are untouched."""
    lb, wallet, tables = racing_lobby
    waiting = await lb.create("ann", WAGERED, public=True)  # sat down before the restriction
    await _restrict(lb, "ann")
    rated = table_pb2.TableOptions(profile="casual", match_length=3, rated=True)
    scored = table_pb2.TableOptions(profile="scored", match_length=1, level="players")
    for opts in (WAGERED, rated, scored):
        with pytest.raises(ServiceError) as refused:
            await lb.create("ann", opts, public=True)
        assert refused.value.code == "RESTRICTED" and "To appeal" in refused.value.message
        with pytest.raises(ServiceError) as queued:
            await lb.quick_match("ann", opts)
        assert queued.value.code == "RESTRICTED"
    bobs = await lb.create("bob", WAGERED, public=True)
    with pytest.raises(ServiceError) as joined:
        await lb.join("ann", bobs.table_id)
    assert joined.value.code == "RESTRICTED"
    with pytest.raises(ServiceError) as registered:
        await lb.refuse_restricted("ann")  # what a tournament's registration asks
    assert registered.value.code == "RESTRICTED"
    casual = await lb.create("ann", table_pb2.TableOptions(profile="casual"), public=True)
    assert casual.status == "open"
    # The table she sat at before: its deal takes nothing and closes, saying why.
    closed = await lb.join("carl", waiting.table_id)
    assert closed.status == "closed" and closed.close_reason == "restricted:ann"
    assert wallet.escrows == {} and tables.created == []
    dealt = await lb.join("carl", bobs.table_id)  # the others play on
    assert dealt.status == "dealt" and wallet.escrows[dealt.match_id] == (["bob", "carl"], 500)
    # Queued for a quick match before her restriction: whoever comes next is not paired with a
    # table that closes under them, but waits at a table of their own.
    waiting_dora = await lb.quick_match("dora", WAGERED)
    await _restrict(lb, "dora")
    found = await lb.quick_match("ed", WAGERED)
    assert found.table_id != waiting_dora.table_id and found.status == "open"
    assert found.player_ids == ["ed", ""]
