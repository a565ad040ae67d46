"""Issue 29, tournaments: the director on the real lobby (the in-memory lobby store, fakes for
the wallet and the table service) with the tournaments' Redis store on a real Valkey. A
sit-and-go of 8 and a scheduled field of 5 (with byes) played to their champions, each pairing
dealt once however many directors drive at once or die between steps; bad requests refused,
typed, with nothing changed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bg.events.v1 import events_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.connections import sql_engine
from services.common.errors import ServiceError
from services.common.log_port import Receipt
from services.common.metrics import ServiceMetrics
from services.common.migrate import migrate
from services.contracts import money_keys
from services.contracts.redis_keys import LOBBY_TAG
from services.matchmaking.adapters.redis_tournaments import KEEP_S, RedisTournamentStore
from services.matchmaking.bracket import prizes
from services.matchmaking.lobby import Lobby
from services.matchmaking.metrics import TournamentMetrics
from services.matchmaking.table_documents import LobbyStatus
from services.matchmaking.tournaments import Tournaments, to_proto
from services.wallet.app import MIGRATIONS
from services.wallet.ledger import Ledger, check_invariants
from services.wallet.schema import operations
from tests.matchmaking.ledger_pool import LedgerPool
from tests.matchmaking.memory_lobby import MemoryLobbyStore
from tests.matchmaking.test_lobby import FakeTables, FakeWallet

pytestmark = [pytest.mark.integration, pytest.mark.single_valkey]
SCORED = table_pb2.TableOptions(profile="scored", match_length=1)


class Clock:
    def __init__(self) -> None:
        self.ms = 1_900_000_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    """The wallet's real ledger (SQLite) behind the director's pool port; the books are checked
    after every test."""
    engine = sql_engine(f"sqlite+aiosqlite:///{tmp_path / 'wallet.db'}")
    await migrate(engine, MIGRATIONS)
    try:
        yield Ledger(engine, fee_bps=800)
        assert await check_invariants(engine) == []
    finally:
        await engine.dispose()


@pytest.fixture
def pool(ledger: Ledger) -> LedgerPool:
    return LedgerPool(ledger)


class FakeResults:
    """The event log behind ResultsPort: what was published, and whether the readers have it
    (`state`: True read, None not yet, False forgotten by the broker)."""

    def __init__(self) -> None:
        self.published: list[events_pb2.TournamentEvent] = []
        self.state: bool | None = True
        self.down = False

    async def publish(self, tournament_id: str, value: bytes) -> Receipt:
        if self.down:
            raise ConnectionError("the broker is away")
        self.published.append(events_pb2.TournamentEvent.FromString(value))
        return Receipt(f"r{len(self.published) - 1}")

    async def read(self, receipt: Receipt) -> bool | None:
        return self.state


@pytest.fixture
def results() -> FakeResults:
    return FakeResults()


@pytest.fixture
def parts(
    redis: Any, pool: LedgerPool, results: FakeResults
) -> tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock]:
    """Two directors (two matchmaking replicas) on one lobby and one tournaments store."""
    tables, clock = FakeTables(), Clock()
    lobby = Lobby(MemoryLobbyStore(), FakeWallet(), tables)
    store = RedisTournamentStore(redis)
    return (
        Tournaments(store, lobby, tables, pool, results, now=clock),
        Tournaments(store, lobby, tables, pool, results, now=clock),
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


async def test_an_unfinished_tournament_never_expires_and_a_finished_one_does(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock], redis: Any
) -> None:
    """Its players' buy-ins wait on the document: a sit-and-go registering for weeks must not
    lose it (a month's TTL once orphaned a pool). Finished, it stays readable a month."""
    a, _, lobby, tables, _ = parts
    made = await a.create(_sng(4, "ttl"))
    key = f"lobby:{LOBBY_TAG}:tn:{made.tournament_id}"
    assert await redis.ttl(key) == -1  # no expiry
    await a.register("p0", made.tournament_id)
    assert await redis.ttl(key) == -1  # a save keeps it so
    assert await redis.ttl("tournament:player:{p0}") == -1  # the player's claim too
    await redis.expire(key, 10**6)  # a document written by the release before: its TTL goes
    await a.register("p1", made.tournament_id)
    assert await redis.ttl(key) == -1
    for p in ("p2", "p3"):
        await a.register(p, made.tournament_id)
    await _play_out(a, a, lobby, tables, made.tournament_id)
    for _ in range(3):  # its result announced, then read
        if made.tournament_id not in await a.store.unfinished():
            break
        assert await redis.ttl(key) == -1  # finished, still driven: no expiry yet
        await a.drive_all()
    assert made.tournament_id not in await a.store.unfinished()
    assert 29 * 86_400 < await redis.ttl(key) <= KEEP_S


async def test_bad_requests_are_refused_typed_and_change_nothing(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock], redis: Any
) -> None:
    a, _, _, _, clock = parts
    unbet = table_pb2.TableOptions(profile="wagered", match_length=1)  # a buy-in is its bet
    flagged = table_pb2.TableOptions(profile="scored", match_length=1, tournament=True)
    cpu = table_pb2.TableOptions(profile="scored", match_length=1, level="easy")
    bad = [
        (_sng(6), "INVALID_SIZE"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="league", options=SCORED, size=4),
         "INVALID_KIND"),
        (matchmaking_pb2.CreateTournamentRequest(name="", kind="sit_and_go", options=SCORED,
                                                 size=4), "INVALID_NAME"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="sit_and_go", options=unbet,
                                                 size=4), "INVALID_OPTION"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="sit_and_go", options=flagged,
                                                 size=4), "INVALID_OPTION"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="sit_and_go", options=cpu,
                                                 size=4), "INVALID_OPTION"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="sit_and_go", options=SCORED,
                                                 size=4, lengths=[0]), "INVALID_OPTION"),
        (matchmaking_pb2.CreateTournamentRequest(name="x", kind="sit_and_go", options=SCORED,
                                                 size=4, lengths=[1, 9]), "INVALID_OPTION"),
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


WAGERED = table_pb2.TableOptions(profile="wagered", match_length=1, bet=100)


def _wagered(
    name: str, size: int = 4, request_id: str = "", starts_ms: int = 0
) -> matchmaking_pb2.CreateTournamentRequest:
    """A wagered knockout (buy-in 100): a sit-and-go, or scheduled when `starts_ms` is given."""
    return matchmaking_pb2.CreateTournamentRequest(
        name=name, kind="scheduled" if starts_ms else "sit_and_go", options=WAGERED, size=size,
        request_id=request_id, starts_ms=starts_ms,
    )  # fmt: skip


async def _count_operations(ledger: Ledger, kind: str) -> int:
    async with ledger.engine.connect() as conn:
        return int(
            await conn.scalar(
                select(func.count()).select_from(operations).where(operations.c.kind == kind)
            )
            or 0
        )


async def _fund(ledger: Ledger, players: list[str], amount: int = 1000) -> None:
    for p in players:
        await ledger.deposit(f"fund:{p}", p, amount)


async def test_a_wagered_sit_and_go_pays_its_pool_to_the_ranks_to_the_diamond_once(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
    ledger: Ledger,
    results: FakeResults,
) -> None:
    """Buy-ins held at registration, captured at the start, the pool less 8% paid 70/30 to the
    champion and the finalist; the matches dealt with no escrow and no bet."""
    a, b, lobby, tables, _ = parts
    players = [f"w{i}" for i in range(8)]
    await _fund(ledger, [*players, "late"])
    await ledger.deposit("fund:poor", "poor", 99)
    created = await a.create(_wagered("Diamonds", size=8, request_id="w"))
    assert (created.buy_in, created.money) == (100, "open")
    with pytest.raises(ServiceError) as poor:
        await a.register("poor", created.tournament_id)
    assert poor.value.code == "INSUFFICIENT_FUNDS" and await ledger.balance("poor") == 99
    assert await a.store.player_tournament("poor") is None  # not held by the tournament
    await a.register("w0", created.tournament_id)
    await a.unregister("w0", created.tournament_id)  # withdrawn: the buy-in back at once
    assert await ledger.balance("w0") == 1000
    for p in players[:7]:
        await b.register(p, created.tournament_id)
    await a.register("w1", created.tournament_id)  # a retry: one buy-in
    assert await ledger.balance("w1") == 900
    full = await a.register("w7", created.tournament_id)
    assert (full.status, full.money, full.prize_money, full.fee) == ("running", "running", 736, 64)
    with pytest.raises(ServiceError) as late:
        await a.register("late", created.tournament_id)
    assert late.value.code == "TOURNAMENT_CLOSED" and await ledger.balance("late") == 1000
    first = to_proto(full)
    for m in first.matches:
        if m.table_id:  # a tournament's match: wagered rules, no bet, no escrow
            table = await lobby.get(m.table_id)
            assert table.options["tournament"] and "bet" not in table.options
    assert lobby.deals.wallet.escrows == {}  # type: ignore[attr-defined]

    done = await _play_out(a, b, lobby, tables, created.tournament_id)
    ranks = {r.player_id: r.rank for r in done.ranks}
    champion, finalist = (next(p for p, r in ranks.items() if r == n) for n in (1, 2))
    assert {p.player_id: p.amount for p in done.prizes} == {champion: 516, finalist: 220}
    assert done.money == "paid"
    balances = {p: await ledger.balance(p) for p in players}
    assert balances[champion] == 900 + 516 and balances[finalist] == 900 + 220
    assert all(v == 900 for p, v in balances.items() if p not in (champion, finalist))
    assert sum(balances.values()) == 8 * 1000 - 64  # the house fee, and not a diamond more
    await asyncio.gather(a.drive_all(), b.drive_all())  # more passes pay nothing again
    assert await _count_operations(ledger, "pay_prizes") == 1
    (event,) = {e.event_id: e for e in results.published}.values()  # the leaderboard's record
    assert {p.player_id: p.prize for p in event.placings if p.prize} == {
        champion: 516, finalist: 220,
    }  # fmt: skip
    assert event.buy_in == 100 and len(event.placings) == 8
    assert await _count_operations(ledger, "start_pool") == 1
    assert {p: await ledger.balance(p) for p in players} == balances


async def test_a_wallet_away_delays_the_start_and_the_payout_and_loses_nothing(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
    ledger: Ledger,
    pool: LedgerPool,
) -> None:
    a, b, lobby, tables, clock = parts
    players = [f"x{i}" for i in range(4)]
    await _fund(ledger, players)
    created = await a.create(_wagered("Away"))
    for p in players[:3]:
        await a.register(p, created.tournament_id)
    pool.down = True
    with pytest.raises(ServiceError):
        await a.register("x3", created.tournament_id)  # the buy-in cannot be held: not seated
    pool.down = False
    doc = await a.register("x3", created.tournament_id)  # full: it starts
    assert doc.money == "running"
    # The start's answer lost as a director dies: the next pass replays it and deals once.
    pool.down = True
    await a.drive_all()
    pool.down = False
    tables_before = len(tables.created)
    await asyncio.gather(a.drive_all(), b.drive_all())
    assert len(tables.created) == tables_before == 2
    # The payout with the wallet away: finished, unpaid, still the director's work.
    for m in to_proto(await a.get(created.tournament_id)).matches:
        if m.table_id:
            tables.winners[(await lobby.get(m.table_id)).match_id] = m.top_id
    await a.drive_all()  # the semifinals' winners recorded
    await a.drive_all()  # the final dealt
    final = next(m for m in to_proto(await a.get(created.tournament_id)).matches if m.round == 2)
    tables.winners[(await lobby.get(final.table_id)).match_id] = final.bottom_id
    pool.down = True
    base = ServiceMetrics("matchmaking")
    a.metrics = TournamentMetrics(base)
    gauge = base.registry.get_sample_value
    clock.ms += 5_000
    await a.drive_all()
    doc = await a.get(created.tournament_id)
    assert (doc.status, doc.money) == ("finished", "running")
    assert created.tournament_id in await a.store.unfinished()
    # What operators see (alert TournamentUnsettled): one ended tournament waiting for its money.
    assert gauge("bg_tournaments_ended_unsettled") == 1
    clock.ms += 5_000
    await a.drive_all()
    assert gauge("bg_tournament_oldest_unsettled_seconds") == 5.0
    # A director pays and dies before it records it: the next pass replays the payment.
    pool.down = False
    ranks = doc.bracket().ranks()
    await pool.pay_prizes(
        f"prizes:{created.tournament_id}", created.tournament_id,
        prizes(doc.prize_money, ranks, 4),
    )  # fmt: skip
    await asyncio.gather(a.drive_all(), b.drive_all())
    doc = await a.get(created.tournament_id)
    assert doc.money == "paid" and doc.prizes == {final.bottom_id: 368}
    await a.drive_all()  # its result announced (the pass above), now read: done
    assert created.tournament_id not in await a.store.unfinished()
    assert gauge("bg_tournaments_ended_unsettled") == 0
    assert await _count_operations(ledger, "pay_prizes") == 1
    assert await ledger.balance(final.bottom_id) == 900 + 368


async def test_a_cancelled_or_unfilled_wagered_tournament_returns_every_buyin(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
    ledger: Ledger,
    pool: LedgerPool,
) -> None:
    a, _, _, _, clock = parts
    players = [f"c{i}" for i in range(4)]
    await _fund(ledger, players)
    running = await a.create(_wagered("Stop"))
    for p in players:
        await a.register(p, running.tournament_id)
    assert {p: await ledger.balance(p) for p in players} == {p: 900 for p in players}
    pool.down = True
    cancelled = await a.cancel(running.tournament_id, "a fault at the venue")
    assert cancelled.status == "cancelled" and cancelled.money == "running"  # refund pending
    pool.down = False
    await a.drive_all()  # the director refunds it
    assert (await a.get(running.tournament_id)).money == "refunded"
    assert {p: await ledger.balance(p) for p in players} == {p: 1000 for p in players}
    unfilled = await a.create(_wagered("Quiet", size=8, starts_ms=clock.ms + 10))
    await a.register("c0", unfilled.tournament_id)
    assert await ledger.balance("c0") == 900
    clock.ms += 20
    await a.drive_all()
    doc = await a.get(unfilled.tournament_id)
    assert (doc.status, doc.cancel_reason, doc.money) == (
        "cancelled",
        "too_few_players",
        "refunded",
    )
    assert await ledger.balance("c0") == 1000
    assert await _count_operations(ledger, "refund_pool") == 2


async def test_a_pool_an_operator_refunded_ends_its_tournament_with_no_prize_paid(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
    ledger: Ledger,
    pool: LedgerPool,
) -> None:
    """An operator refunds a pool taken for an orphan (admin RefundOrphanPool) and then its
    document comes back (a restore): at the next registration, at the start or at the payout
    the director finds the pool closed, cancels or settles as refunded, and pays nothing."""
    a, b, lobby, tables, clock = parts
    players = [f"o{i}" for i in range(4)]
    await _fund(ledger, [*players, "late"])

    async def operator_refund(tournament_id: str) -> None:
        await pool.pools.refund(money_keys.pool_refund(tournament_id), tournament_id)

    # Registering: the next registration finds the pool closed and the tournament ends.
    registering = await a.create(_wagered("Restored"))
    for p in players[:2]:
        await a.register(p, registering.tournament_id)
    await operator_refund(registering.tournament_id)
    with pytest.raises(ServiceError) as closed:
        await a.register("late", registering.tournament_id)
    assert closed.value.code == "TOURNAMENT_CLOSED" and await ledger.balance("late") == 1000
    await a.drive_all()
    doc = await a.get(registering.tournament_id)
    assert (doc.status, doc.cancel_reason, doc.money) == ("cancelled", "pool_closed", "refunded")
    # Scheduled: the start finds it closed.
    scheduled = await a.create(_wagered("Later", size=8, starts_ms=clock.ms + 10))
    for p in players[:2]:
        await a.register(p, scheduled.tournament_id)
    await operator_refund(scheduled.tournament_id)
    clock.ms += 20
    await a.drive_all()
    doc = await a.get(scheduled.tournament_id)
    assert (doc.status, doc.cancel_reason, doc.money) == ("cancelled", "pool_closed", "refunded")
    # Running: played to its champion, the payout finds it closed; nobody is paid twice.
    running = await a.create(_wagered("Running"))
    for p in players:
        await a.register(p, running.tournament_id)
    await operator_refund(running.tournament_id)
    await _play_out(a, b, lobby, tables, running.tournament_id)
    await a.drive_all()
    doc = await a.get(running.tournament_id)
    assert (doc.status, doc.money, doc.prizes) == ("finished", "refunded", {})
    assert {p: await ledger.balance(p) for p in [*players, "late"]} == {
        p: 1000 for p in [*players, "late"]
    }
    assert await _count_operations(ledger, "pay_prizes") == 0
    assert await _count_operations(ledger, "refund_pool") == 3


async def test_the_result_is_announced_until_read_and_again_if_the_broker_forgot_it(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock], results: FakeResults
) -> None:
    """The document is the result's outbox: a broker away, a record not yet read, a broker that
    forgot it; the tournament stays the director's work until its readers have the record."""
    a, b, lobby, tables, _ = parts
    results.down = True
    created = await a.create(_sng(4, "ann"))
    for i in range(4):
        await a.register(f"n{i}", created.tournament_id)
    done = await _play_out(a, b, lobby, tables, created.tournament_id)
    assert results.published == [] and created.tournament_id in await a.store.unfinished()
    assert await a.store.player_tournament("n0") is None  # the players are free already
    results.down, results.state = False, None  # published, not read yet
    await a.drive_all()
    assert len(results.published) == 1 and created.tournament_id in await a.store.unfinished()
    results.state = False  # the broker forgot it: published again
    await a.drive_all()
    assert len(results.published) == 2
    results.state = True
    await asyncio.gather(a.drive_all(), b.drive_all())
    assert created.tournament_id not in await a.store.unfinished()
    event = results.published[-1]
    assert event.event_id == f"tournament:{created.tournament_id}" and event.profile == "scored"
    assert [(p.player_id, p.rank) for p in event.placings] == sorted(
        ((r.player_id, r.rank) for r in done.ranks), key=lambda pr: (pr[1], pr[0])
    )
    assert event.placings[0].rank == 1 and event.at_ms == done.finished_ms
    await a.drive_all()
    assert len(results.published) == 2  # left the director's work: nothing more


@pytest.mark.parametrize("profile", ["wagered", "scored"])
async def test_two_registrations_sent_together_seat_the_player_in_one_tournament(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
    ledger: Ledger,
    pool: LedgerPool,
    profile: str,
) -> None:
    """RULES I-39 (W-4): one tournament per player at a time, even for two requests at once
    (issue 41, item 3). The wallet takes a while to hold a buy-in, as a real one does: the
    second registration must not take the first one's claim, still being held, for a leftover."""
    a, b, _, _, _ = parts
    pool.latency_s = 0.05
    await _fund(ledger, ["racer"])
    for attempt in range(6):
        make = _wagered if profile == "wagered" else (lambda name, **_: _sng(4, name))
        one = await a.create(make(f"one{attempt}"))
        two = await a.create(make(f"two{attempt}"))
        got = await asyncio.gather(
            a.register("racer", one.tournament_id),
            b.register("racer", two.tournament_id),
            return_exceptions=True,
        )
        won = [g for g in got if not isinstance(g, BaseException)]
        lost = [g for g in got if isinstance(g, BaseException)]
        assert len(won) == 1, got
        assert isinstance(lost[0], ServiceError) and lost[0].code == "TOURNAMENT_ELSEWHERE"
        seated = [t for t in (one, two) if "racer" in (await a.get(t.tournament_id)).players]
        assert [t.tournament_id for t in seated] == [won[0].tournament_id]
        assert await a.store.player_tournament("racer") == won[0].tournament_id
        if profile == "wagered":  # one buy-in held, the other released (or never taken)
            assert await ledger.balance("racer") == 900
        await a.unregister("racer", won[0].tournament_id)
        if profile == "wagered":
            assert await ledger.balance("racer") == 1000


async def test_registering_for_a_cancelled_tournament_is_closed_even_for_its_players(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
    ledger: Ledger,
) -> None:
    """Issue 41, item 10: a player registered in a tournament an operator cancelled (and
    refunded) who registers again is told TOURNAMENT_CLOSED, with nothing held again."""
    a, _, _, _, _ = parts
    await _fund(ledger, ["back"])
    doc = await a.create(_wagered("Gone"))
    await a.register("back", doc.tournament_id)
    await a.cancel(doc.tournament_id, "venue closed")
    assert await ledger.balance("back") == 1000
    with pytest.raises(ServiceError) as closed:
        await a.register("back", doc.tournament_id)
    assert closed.value.code == "TOURNAMENT_CLOSED"
    assert await ledger.balance("back") == 1000
    assert await a.store.player_tournament("back") is None


async def test_a_registration_that_died_midway_holds_the_player_a_minute_then_lets_go(
    parts: tuple[Tournaments, Tournaments, Lobby, FakeTables, Clock],
) -> None:
    """A registration that marked itself and took the player's claim, then died (its replica
    killed): for JOIN_HELD_MS the claim is live and another tournament refuses the player
    (TOURNAMENT_ELSEWHERE: it might still sit); a retry of that registration after JOIN_SIT_MS
    marks itself anew and sits; past JOIN_HELD_MS the leftover is taken over."""
    from services.matchmaking.tournaments import JOIN_HELD_MS, JOIN_SIT_MS, _joining

    a, _, _, _, clock = parts
    one, two = await a.create(_sng(4, "died-1")), await a.create(_sng(4, "died-2"))
    for player in ("crashy", "later"):
        await a._update(one.tournament_id, _joining(player, clock.ms))
        await a.store.claim_player(player, one.tournament_id, "")
    with pytest.raises(ServiceError) as elsewhere:
        await a.register("crashy", two.tournament_id)
    assert elsewhere.value.code == "TOURNAMENT_ELSEWHERE"
    clock.ms += JOIN_SIT_MS + 1  # too late for the dead registration to sit: a retry re-marks
    assert "crashy" in (await a.register("crashy", one.tournament_id)).players
    clock.ms += JOIN_HELD_MS  # the other leftover lapsed: taken over by a new registration
    assert "later" in (await a.register("later", two.tournament_id)).players
    assert await a.store.player_tournament("later") == two.tournament_id
    assert "later" not in (await a.get(one.tournament_id)).players
