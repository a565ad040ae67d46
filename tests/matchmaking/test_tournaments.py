"""Issue 29, tournaments: the director on the real lobby (the in-memory lobby store, fakes for
the wallet and the table service) with the tournaments' Redis store on a real Valkey. A
sit-and-go of 8 and a scheduled field of 5 (with byes) played to their champions, each pairing
dealt once however many directors drive at once or die between steps; bad requests refused,
typed, with nothing changed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis_asyncio

from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.errors import ServiceError
from services.matchmaking.adapters.redis_tournaments import RedisTournamentStore
from services.matchmaking.lobby import Lobby, LobbyStatus
from services.matchmaking.tournaments import Tournaments, to_proto
from tests.matchmaking.memory_lobby import MemoryLobbyStore
from tests.matchmaking.test_lobby import FakeTables, FakeWallet

pytestmark = pytest.mark.integration
SCORED = table_pb2.TableOptions(profile="scored", match_length=1)


class Clock:
    def __init__(self) -> None:
        self.ms = 1_900_000_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
async def redis(valkey_url: str) -> AsyncIterator[Any]:
    client = redis_asyncio.Redis.from_url(valkey_url)
    await client.flushdb()
    yield client
    await client.aclose()


@pytest.fixture
def parts(redis: Any) -> tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock]:
    """Two directors (two matchmaking replicas) on one lobby and one tournaments store."""
    tables, clock = FakeTables(), Clock()
    lobby = Lobby(MemoryLobbyStore(), FakeWallet(), tables)
    store = RedisTournamentStore(redis)
    return (
        Tournaments(store, lobby, tables, now=clock),
        Tournaments(store, lobby, tables, now=clock),
        lobby, tables, clock,
    )  # fmt: skip


def _sng(size: int, request_id: str = "") -> matchmaking_pb2.CreateTournamentRequest:
    return matchmaking_pb2.CreateTournamentRequest(
        name="Friday", kind="sit_and_go", options=SCORED, size=size, lengths=[1, 1, 3],
        request_id=request_id,
    )  # fmt: skip


async def _play_out(
    a: Tournaments, b: Tournaments, lobby: Lobby, tables: FakeTables, tournament_id: str
) -> matchmaking_pb2.Tournament:
    """Drive with both directors at once; end each dealt match (the top seat wins) until done."""
    for _ in range(40):
        await asyncio.gather(a.drive_all(), b.drive_all())
        doc = to_proto(await a.get(tournament_id))
        if doc.status == "finished":
            return doc
        for m in doc.matches:
            if m.table_id and not m.winner_id:
                table = await lobby.get(m.table_id)
                if table.status == LobbyStatus.DEALT:
                    tables.winners[table.match_id] = m.top_id
    raise AssertionError(f"not finished: {doc}")


async def test_a_sit_and_go_of_eight_plays_to_its_champion_each_pairing_dealt_once(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
) -> None:
    a, b, lobby, tables, _ = parts
    created = await a.create(_sng(8, "r1"))
    assert (await a.create(_sng(8, "r1"))).tournament_id == created.tournament_id  # a retry
    players = [f"g{i}" for i in range(8)]
    for p in players[:7]:
        assert (await b.register(p, created.tournament_id)).status == "registering"
    await a.register(players[0], created.tournament_id)  # twice: still one seat
    full = await b.register(players[7], created.tournament_id)  # the 8th: it starts at once
    assert full.status == "running" and sorted(full.seeded) == players
    first = to_proto(full)
    dealt = [m for m in first.matches if m.round == 1]
    assert len(dealt) == 4 and all(m.table_id for m in dealt)
    for m in dealt:  # each pairing seated at its own table, dealt, with its round's length
        table = await lobby.get(m.table_id)
        assert table.status == LobbyStatus.DEALT and table.watchable
        assert table.player_ids == [m.top_id, m.bottom_id] and table.tournament_id
        assert table.options["match_length"] == 1

    done = await _play_out(a, b, lobby, tables, created.tournament_id)
    assert len(tables.created) == 7 and tables.creates == 7  # 7 matches, each created once
    final = next(m for m in done.matches if m.round == 3)
    assert (await lobby.get(final.table_id)).options["match_length"] == 3
    ranks = {r.player_id: r.rank for r in done.ranks}
    assert sorted(ranks.values()) == [1, 2, 3, 3, 5, 5, 5, 5]
    assert ranks[final.winner_id] == 1 and final.winner_id == done.field[0]  # top seats won
    # Finished: every player may enter another tournament.
    again = await a.create(_sng(4, "r2"))
    await a.register(players[0], again.tournament_id)


async def test_a_scheduled_field_of_five_gets_three_byes_and_four_matches(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
) -> None:
    a, b, lobby, tables, clock = parts
    request = matchmaking_pb2.CreateTournamentRequest(
        name="Sunday", kind="scheduled", options=SCORED, size=16, starts_ms=clock.ms + 60_000
    )
    created = await a.create(request)
    for i in range(5):
        await a.register(f"s{i}", created.tournament_id)
    await a.drive_all()
    assert (await a.get(created.tournament_id)).status == "registering"  # not yet due
    clock.ms += 60_000
    done = await _play_out(a, b, lobby, tables, created.tournament_id)
    first = [m for m in done.matches if m.round == 1]
    byes = [m for m in first if not (m.top_id and m.bottom_id)]
    assert len(byes) == 3 and all(m.winner_id and not m.table_id for m in byes)
    assert len(tables.created) == 4  # 5 players, 4 matches
    assert sorted(r.rank for r in done.ranks) == [1, 2, 3, 3, 5]


async def test_a_scheduled_tournament_without_a_field_is_cancelled_and_frees_its_player(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
) -> None:
    a, _, _, _, clock = parts
    request = matchmaking_pb2.CreateTournamentRequest(
        name="Empty", kind="scheduled", options=SCORED, size=8, starts_ms=clock.ms + 1
    )
    lonely = await a.create(request)
    await a.register("solo", lonely.tournament_id)
    clock.ms += 10
    await a.drive_all()
    doc = await a.get(lonely.tournament_id)
    assert (doc.status, doc.cancel_reason) == ("cancelled", "too_few_players")
    other = await a.create(_sng(4))
    await a.register("solo", other.tournament_id)  # free again


async def test_an_undone_deal_is_dealt_again_and_a_director_dying_midway_loses_nothing(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
) -> None:
    a, b, lobby, tables, _ = parts
    created = await a.create(_sng(4))
    tables.refuse = True  # the table service refuses the match: the lobby undoes the deal
    for i in range(4):
        await a.register(f"k{i}", created.tournament_id)
    doc = await a.get(created.tournament_id)
    assert doc.status == "running" and doc.attempts == {"1:0": 1, "1:1": 1}
    tables.refuse = False
    tables.down = True  # the next pass dies at the table service (as a killed director would)
    await a.drive_all()
    tables.down = False
    await asyncio.gather(a.drive_all(), b.drive_all())  # two directors pick up from the store
    doc = await a.get(created.tournament_id)
    assert sorted(doc.tables) == ["1:0", "1:1"] and len(tables.created) == 2
    done = await _play_out(a, b, lobby, tables, created.tournament_id)
    assert len(tables.created) == 3 and done.status == "finished"


async def test_bad_requests_are_refused_typed_and_change_nothing(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock], redis: Any
) -> None:
    a, _, _, _, clock = parts
    wagered = table_pb2.TableOptions(profile="wagered", match_length=1, bet=100)
    cpu = table_pb2.TableOptions(profile="scored", match_length=1, level="easy")
    bad = [
        (_sng(6), "INVALID_SIZE"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="league", options=SCORED, size=4),
         "INVALID_KIND"),
        (matchmaking_pb2.CreateTournamentRequest(name="", kind="sit_and_go", options=SCORED,
                                                 size=4), "INVALID_NAME"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="sit_and_go", options=wagered,
                                                 size=4), "INVALID_OPTION"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="sit_and_go", options=cpu,
                                                 size=4), "INVALID_OPTION"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="sit_and_go", options=SCORED,
                                                 size=4, lengths=[0]), "INVALID_OPTION"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="scheduled", options=SCORED,
                                                 size=4, starts_ms=clock.ms - 1), "INVALID_START"),
    ]  # fmt: skip
    for request, code in bad:
        with pytest.raises(ServiceError) as refused:
            await a.create(request)
        assert refused.value.code == code
    assert await redis.keys("lobby:*tn:*") == []

    one, two = await a.create(_sng(4)), await a.create(_sng(4))
    await a.register("p1", one.tournament_id)
    before = json.dumps(await a.store.read(two.tournament_id))
    for call, code in [
        (a.register("p1", two.tournament_id), "TOURNAMENT_ELSEWHERE"),
        (a.register("p1", "nope"), "UNKNOWN_TOURNAMENT"),
        (a.unregister("p2", two.tournament_id), "NOT_REGISTERED"),
    ]:
        with pytest.raises(ServiceError) as refused:
            await call
        assert refused.value.code == code
    assert json.dumps(await a.store.read(two.tournament_id)) == before
    await a.unregister("p1", one.tournament_id)
    await a.register("p1", two.tournament_id)  # withdrawn: free to enter the other
    cancelled = await a.cancel(two.tournament_id, "test")
    assert cancelled.status == "cancelled"
    with pytest.raises(ServiceError) as over:
        await a.register("p9", two.tournament_id)
    assert over.value.code == "TOURNAMENT_CLOSED"
    with pytest.raises(ServiceError) as twice:
        await a.cancel(two.tournament_id, "again")
    assert twice.value.code == "TOURNAMENT_OVER"
    await a.register("p1", one.tournament_id)  # the cancel freed p1
