"""Boards from recorded event sequences (SQLite and PostgreSQL, real Valkey): every I-12, I-13,
I-18, I-19 case; redelivery and replay give identical boards; season rollover; FIBS ratings."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis_asyncio

from bg.events.v1 import events_pb2
from services.common.connections import sql_engine
from services.common.migrate import migrate
from services.contracts.topics import TABLE_EVENTS, TOURNAMENT_EVENTS, WALLET_EVENTS
from services.leaderboard import boards
from services.leaderboard.adapters.sql_boards import SqlBoardStore
from services.leaderboard.app import MIGRATIONS
from services.leaderboard.consumer import EventHandler, rebuild
from services.leaderboard.ports import BoardRepository, Profile, merged
from tests.helpers import sql_url
from tests.leaderboard.memory_boards import MemoryBoardStore

pytestmark = pytest.mark.integration
MONDAY = 1_795_392_000_000  # 2026-11-23 00:00 UTC
P = ["ann", "bob"]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, valkey_url: str
) -> AsyncIterator[BoardRepository]:
    """Issue 17: the in-memory store the unit tests use, and the real one (SQL record, Redis
    ranks) it must answer like, through every test here."""
    if request.param == "memory":
        yield MemoryBoardStore()
        return
    engine = sql_engine(await sql_url(request, tmp_path, "lb"))
    await migrate(engine, MIGRATIONS)
    redis = redis_asyncio.Redis.from_url(valkey_url)
    await redis.flushdb()
    yield SqlBoardStore(engine, redis)
    await redis.aclose()
    await engine.dispose()


async def _lose_ranks(store: BoardRepository) -> None:
    """What a Redis that lost its data leaves: the record without its ranks."""
    if isinstance(store, SqlBoardStore):
        await store.redis.flushdb()
    else:
        assert isinstance(store, MemoryBoardStore)
        store.ranks.clear()


def info(
    profile: str,
    rated: bool = False,
    length: int = 3,
    test: bool = False,
    level: str = "players",
    players: list[str] = P,
) -> events_pb2.MatchInfo:
    return events_pb2.MatchInfo(
        profile=profile,
        player_ids=players,
        match_length=length,
        rated=rated,
        test_game=test,
        level=level,
    )


def _result(name: str) -> str:
    return "GAME_RESULT_" + name.upper()


def game(
    table: str, seq: int, mi: events_pb2.MatchInfo, winner: int, result: str, at: int = MONDAY
) -> tuple[str, bytes]:
    ev = events_pb2.TableEvent(event_id=f"{table}:{seq}", table_id=table, seq=seq, at_ms=at)
    ev.game_ended.CopyFrom(
        events_pb2.GameEnded(info=mi, winner_seat=winner, result=_result(result), points=1, cube=1)
    )
    return TABLE_EVENTS, ev.SerializeToString()


def match(
    table: str,
    seq: int,
    mi: events_pb2.MatchInfo,
    winner: int,
    reason: str,
    games: list[tuple[int, str]],
    points: tuple[int, int] = (0, 0),
    at: int = MONDAY,
) -> tuple[str, bytes]:
    ev = events_pb2.TableEvent(event_id=f"{table}:{seq}", table_id=table, seq=seq, at_ms=at)
    ev.match_ended.CopyFrom(
        events_pb2.MatchEnded(
            info=mi, winner_seat=winner, reason="END_REASON_" + reason.upper(),
            scored_points=list(points),
            games=[events_pb2.GameEnded(winner_seat=w, result=_result(r)) for w, r in games],
        )
    )  # fmt: skip
    return TABLE_EVENTS, ev.SerializeToString()


def settle(op: int, winner: str, net: int, at: int = MONDAY, match: str = "") -> tuple[str, bytes]:
    ev = events_pb2.WalletEvent(
        event_id=f"wallet:{op}",
        operation_id=op,
        kind="settle",
        winner_id=winner,
        net_gain=net,
        at_ms=at,
        match_id=match,
    )
    return WALLET_EVENTS, ev.SerializeToString()


def recorded(ann: str = "ann", bob: str = "bob") -> list[tuple[str, bytes]]:
    pair = [ann, bob]
    rated = info("wagered", rated=True, length=3, players=pair)
    unrated = info("wagered", rated=False, length=1, players=pair)
    return [
        # t1, rated wagered to 3: ann wins a gammon (cube 4: still 20), bob a single, ann a single.
        game("t1", 5, rated, 0, "gammon"),
        game("t1", 9, rated, 1, "single"),
        game("t1", 14, rated, 0, "single"),
        match("t1", 15, rated, 0, "points", [(0, "gammon"), (1, "single"), (0, "single")]),
        settle(1, ann, 840, match="t1-1"),
        # t2, rated: bob wins only because ann resigned twice: game trophies, no match bonus.
        game("t2", 3, rated, 1, "resign"),
        game("t2", 6, rated, 1, "resign"),
        match("t2", 7, rated, 1, "points", [(1, "resign"), (1, "resign")]),
        # t3, rated: ann drops a double she cannot cover, then leaves: bob's drop game counts.
        game("t3", 4, rated, 1, "drop"),
        match("t3", 5, rated, 1, "left", [(1, "drop")]),
        # t4, unrated wagered: no trophies; the league counts it (I-13).
        game("t4", 2, unrated, 0, "backgammon"),
        match("t4", 3, unrated, 0, "points", [(0, "backgammon")]),
        settle(2, ann, 184),
        # scored (I-18): a normal loss, a leader leaving (nothing), a test game (nowhere), vs CPU.
        match("s1", 9, info("scored"), 0, "points", [], points=(1, -1)),
        match("s2", 9, info("scored"), 1, "left", [], points=(0, 0)),
        match("s3", 9, info("scored", test=True), 1, "points", [], points=(-1, 1)),
        match(
            "s4",
            9,
            info("scored", level="easy", players=["ann", "cpu-easy-s4"]),
            0,
            "points",
            [],
            points=(1, -1),
        ),
        # casual ranked (I-26): ann beats bob in a match to 1; unranked and vs CPU do not count.
        match("c1", 9, info("casual", rated=True, length=1), 0, "points", []),
        match("c2", 9, info("casual", rated=False, length=1), 1, "points", []),
        match(
            "c3",
            9,
            info("casual", rated=True, length=1, players=["ann", "cpu-normal-c3"]),
            1,
            "points",
            [],
        ),
        # next season: ann wins 100 more diamonds.
        settle(3, ann, 100, at=MONDAY + 7 * 86_400_000),
    ]


async def _boards(store: BoardRepository) -> dict[str, object]:
    out: dict[str, object] = {}
    keys = (
        ("trophies", "all"), ("trophies", "2026-11-23"), ("league", "2026-11-23"),
        ("league", "2026-11-30"), ("scored", "players"), ("scored", "easy"), ("rating", "all"),
    )  # fmt: skip
    for board, key in keys:
        out[f"{board}:{key}"] = [(p, round(s, 6)) for _, p, s in await store.top(board, key, 50)]
    out["ann"] = await store.profile("ann")
    out["bob"] = await store.profile("bob")
    return out


async def test_boards_from_a_recorded_sequence(store: BoardRepository) -> None:
    handler = EventHandler(store)
    for topic, raw in recorded():
        await handler.handle(topic, raw)
    b = await _boards(store)
    # ann: 20 + 10 game trophies + 30 match bonus; bob: 10 (t1) + 20 (resigns) + 10 (drop).
    assert b["trophies:all"] == [("ann", 60.0), ("bob", 40.0)]
    assert b["trophies:2026-11-23"] == b["trophies:all"]
    assert b["league:2026-11-23"] == [("ann", 1024.0)]  # 840 + 184 (I-13, rated or not)
    assert b["league:2026-11-30"] == [("ann", 100.0)]  # season rollover
    assert b["scored:players"] == [
        ("ann", 1.0),
        ("bob", -1.0),
    ]  # test game and leader-leaving: nothing
    assert b["scored:easy"] == [("ann", 1.0)]  # the computer is not ranked (I-31)
    assert b["rating:all"] == [("ann", 1510.0), ("bob", 1490.0)]  # FIBS: +/-10 at 1500 (I-26)
    ann = b["ann"]
    assert isinstance(ann, Profile) and ann.experience == 1 and ann.rated_matches == 1


async def _changes(store: BoardRepository, match: str, player: str) -> list[tuple[object, ...]]:
    return [(c.board, c.key, c.before, c.after) for c in merged(await store.changes(match, player))]


async def test_what_each_match_changed_a_players_record_and_rating_course(
    store: BoardRepository,
) -> None:
    """Issue 60: what a match changed for each player (the end panel's words), by match; a
    player's record per profile (a test game in none, I-18) and their rating's course (I-26);
    a board read a page at a time. A rebuild from the archive writes the same again."""
    handler = EventHandler(store)
    events = as_tables_send(recorded())
    for topic, raw in events:
        await handler.handle(topic, raw)
    season = "2026-11-23"
    # t1: three games' trophies (20, 10 for bob, 10) and the match's 30, one line a board; the
    # settlement's league diamonds by the same match.
    assert await _changes(store, "t1-1", "ann") == [
        ("trophies", season, 0.0, 60.0), ("trophies", "all", 0.0, 60.0),
        ("league", season, 0.0, 840.0),
    ]  # fmt: skip
    assert await _changes(store, "t1-1", "bob") == [
        ("trophies", season, 0.0, 10.0), ("trophies", "all", 0.0, 10.0),
    ]  # fmt: skip
    assert await _changes(store, "t2-1", "bob") == [
        ("trophies", season, 10.0, 30.0), ("trophies", "all", 10.0, 30.0),
    ]  # fmt: skip
    assert await _changes(store, "s1-1", "bob") == [("scored", "players", 0.0, -1.0)]
    assert await _changes(store, "c1-1", "ann") == [("rating", "all", 1500.0, 1510.0)]
    assert await _changes(store, "c1-1", "bob") == [("rating", "all", 1500.0, 1490.0)]
    assert await _changes(store, "c2-1", "ann") == []  # unrated: nothing changed
    assert await _changes(store, "t1-1", "cy") == []
    ann = await store.profile("ann")
    assert ann.rating_course == [("c1-1", MONDAY, 1510.0)]
    assert ann.record == {"wagered": (2, 2), "scored": (2, 1), "casual": (1, 2)}
    assert (await store.profile("bob")).record == {
        "wagered": (2, 2), "scored": (1, 1), "casual": (1, 1)
    }  # fmt: skip
    assert await store.top("trophies", "all", 1, 1) == [(2, "bob", 40.0)]
    assert await store.top("trophies", "all", 10, 2) == []
    before = [await _changes(store, m, "ann") for m in ("t1-1", "c1-1", "s1-1")]
    await rebuild(handler)
    assert [await _changes(store, m, "ann") for m in ("t1-1", "c1-1", "s1-1")] == before
    assert (await store.profile("ann")).rating_course == ann.rating_course


async def test_redelivery_and_replay_give_identical_boards(store: BoardRepository) -> None:
    handler = EventHandler(store)
    events = recorded()
    for topic, raw in events:
        await handler.handle(topic, raw)
    first = await _boards(store)
    for topic, raw in events + events[:5]:  # every event delivered again
        assert await handler.handle(topic, raw) in ("duplicate", "ignored")
    assert await _boards(store) == first
    await store.reset()  # replay into empty stores
    for topic, raw in events:
        await handler.handle(topic, raw)
    assert await _boards(store) == first
    await _lose_ranks(store)  # Redis lost: the ranks come back from SQL
    assert await store.top("trophies", "all", 50) == []
    await store.resync()
    assert await _boards(store) == first


def as_tables_send(events: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The recorded events as the table service sends them: each match end names its match and
    carries the games before it among its moves (the record, RECORD_KINDS)."""
    out: list[tuple[str, bytes]] = []
    games: dict[str, list[events_pb2.TableEvent]] = {}
    for topic, raw in events:
        if topic == TABLE_EVENTS:
            ev = events_pb2.TableEvent()
            ev.ParseFromString(raw)
            ev.match_id = f"{ev.table_id}-1"
            kind = ev.WhichOneof("body")
            if kind == "game_ended":
                games.setdefault(ev.table_id, []).append(ev)
            elif kind in ("match_ended", "match_closed"):
                getattr(ev, kind).moves.extend(games.pop(ev.table_id, []))
            raw = ev.SerializeToString()
        out.append((topic, raw))
    return out


async def test_rebuild_and_a_players_replay_come_from_the_archive(store: BoardRepository) -> None:
    """Issue 25: the topics keep a bounded history, so the boards are rebuilt (and a player's
    events replayed) from the leaderboard's own archive: every finished match with its moves
    and every wallet event it applied. The rebuild reaches the same boards as live consumption,
    and a replay changes nothing that was applied."""
    from services.leaderboard.consumer import rebuild, replay_player

    handler = EventHandler(store)
    ann, bob = "ann", "bob"
    for topic, raw in as_tables_send(recorded(ann, bob)):
        await handler.handle(topic, raw)
    live = (await store.profile(ann), await store.profile(bob))
    assert live[0].trophies["all"] == 60 and live[0].league  # games, the match, the diamonds
    archive = await store.archived_events()
    assert {topic for topic, _ in archive} == {TABLE_EVENTS, WALLET_EVENTS}
    assert await rebuild(handler) > 0
    assert (await store.profile(ann), await store.profile(bob)) == live
    again = await replay_player(handler, ann)
    assert again["events"] > 0 and again["applied"] == 0  # each event id applies once
    assert (await store.profile(ann), await store.profile(bob)) == live
    assert await store.archived_events("nobody") == []


def _finished(tournament_id: str, at_ms: int, ranks: dict[str, int]) -> bytes:
    return events_pb2.TournamentEvent(
        event_id=f"tournament:{tournament_id}", tournament_id=tournament_id, profile="scored",
        kind="sit_and_go", at_ms=at_ms,
        placings=[events_pb2.TournamentPlacing(player_id=p, rank=r) for p, r in ranks.items()],
    ).SerializeToString()  # fmt: skip


async def test_tournament_wins_count_per_season_once_and_come_back_from_the_archive(
    store: BoardRepository,
) -> None:
    """Issue 29: a finished tournament's result (tournament-events) adds a win to its champion,
    all time and in the season it finished; a redelivery counts nothing; the archive keeps every
    player's rank, and a rebuild gives the same board."""
    from services.leaderboard.consumer import rebuild, replay_player

    handler = EventHandler(store)
    week = 7 * 86_400_000
    first = _finished("u1", MONDAY + 1000, {"ann": 1, "bob": 2, "cy": 3, "di": 3})
    second = _finished("u2", MONDAY + 2000, {"bob": 1, "ann": 2})
    third = _finished("u3", MONDAY + week + 5, {"ann": 1, "bob": 2})
    assert [await handler.handle(TOURNAMENT_EVENTS, r) for r in (first, first, second, third)] == [
        "applied", "duplicate", "applied", "applied",
    ]  # fmt: skip
    this_week, next_week = boards.season_of(MONDAY, week), boards.season_of(MONDAY + week, week)
    assert await store.top("tournaments", "all", 10) == [(1, "ann", 2.0), (2, "bob", 1.0)]
    assert sorted((p, n) for _, p, n in await store.top("tournaments", this_week, 10)) == [
        ("ann", 1.0), ("bob", 1.0),
    ]  # fmt: skip
    assert await store.top("tournaments", next_week, 10) == [(1, "ann", 1.0)]
    assert (await store.profile("ann")).tournaments == {"all": 2, this_week: 1, next_week: 1}
    assert (await store.profile("cy")).tournaments == {}  # a semifinalist: ranked, no win
    kept = await store.archived_events("cy")
    assert kept == [(TOURNAMENT_EVENTS, first)]
    before = await store.top("tournaments", "all", 10)
    assert await rebuild(handler) == 3
    assert await store.top("tournaments", "all", 10) == before
    assert (await replay_player(handler, "bob"))["applied"] == 0


async def test_the_rebuild_command_empties_the_boards_and_applies_the_archive(
    tmp_path: Path, valkey_url: str
) -> None:
    """`python -m services.leaderboard rebuild` (app.rebuild_boards, on the service's own
    settings): boards whose ranks were lost come back from the archive, as live consumption
    made them."""
    from services.leaderboard.app import rebuild_boards

    url = f"sqlite+aiosqlite:///{tmp_path}/lb.db"
    engine = sql_engine(url)
    await migrate(engine, MIGRATIONS)
    redis = redis_asyncio.Redis.from_url(valkey_url)
    await redis.flushdb()
    store = SqlBoardStore(engine, redis)
    try:
        handler = EventHandler(store)
        for topic, raw in as_tables_send(recorded("ann", "bob")):
            await handler.handle(topic, raw)
        live = await store.top("trophies", "all", 10)
        assert live
        await store.reset()
        assert await store.top("trophies", "all", 10) == []
        env = {"BG_DATABASE_URL": url, "BG_REDIS_URL": valkey_url}
        assert await rebuild_boards(env) > 0
        assert await store.top("trophies", "all", 10) == live
    finally:
        await redis.aclose()
        await engine.dispose()


async def test_service_exports_its_metrics(
    tmp_path: Path, valkey_url: str, kafka_bootstrap: str
) -> None:
    from services.common.host import ServiceHost
    from services.leaderboard.app import build_app
    from tests.helpers import scrape_metrics

    host = ServiceHost(
        build_app({"BG_GRPC_PORT": "0", "BG_METRICS_PORT": "0", "BG_REDIS_URL": valkey_url,
                   "BG_KAFKA_BOOTSTRAP": kafka_bootstrap, "BG_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/m.db"})
    )  # fmt: skip
    await host.start()
    try:
        body = ""
        for _ in range(100):
            body = await scrape_metrics(host.metrics_port)
            if 'bg_leaderboard_board_size{board="rating"}' in body:
                break
            await asyncio.sleep(0.1)
        assert (
            "bg_leaderboard_consumer_lag" in body
            and 'bg_leaderboard_board_size{board="rating"}' in body
        )
    finally:
        await host.stop()


async def test_finished_matches_are_archived_with_every_move_for_their_players(
    store: BoardRepository,
) -> None:
    """Issue 13 req. 6: the history outlives the table's keys in Redis."""
    handler = EventHandler(store)
    run = uuid.uuid4().hex[:6]
    ann, bob = f"ann{run}", f"bob{run}"
    ended = events_pb2.TableEvent(
        event_id=f"t{run}:40", table_id=f"t{run}", seq=40, match_id=f"t{run}-1", at_ms=MONDAY + 5
    )
    ended.match_ended.info.CopyFrom(info("casual", players=[ann, bob]))
    ended.match_ended.winner_seat = 1
    ended.match_ended.seed_hex = "ab" * 16
    roll = events_pb2.TableEvent(seq=3, match_id=f"t{run}-1")
    roll.dice_rolled.seat = 0
    roll.dice_rolled.dice.extend([3, 1])
    ended.match_ended.moves.append(roll)
    closed = events_pb2.TableEvent(
        event_id=f"u{run}:9", table_id=f"u{run}", seq=9, match_id=f"u{run}-1", at_ms=MONDAY + 9
    )
    closed.match_closed.info.CopyFrom(info("casual", players=[ann, f"cy{run}"]))
    for event in (ended, closed, ended):  # a redelivery archives nothing twice
        await handler.handle(TABLE_EVENTS, event.SerializeToString())
    history = [events_pb2.TableEvent.FromString(raw) for raw in await store.history(ann, 10, 0)]
    assert [e.match_id for e in history] == [f"u{run}-1", f"t{run}-1"]  # newest first
    assert [e.match_id for e in await _history(store, bob)] == [f"t{run}-1"]
    older = await store.history(ann, 10, MONDAY + 9)
    assert [events_pb2.TableEvent.FromString(r).match_id for r in older] == [f"t{run}-1"]
    raw = await store.archived(f"t{run}-1")
    assert raw is not None
    kept = events_pb2.TableEvent.FromString(raw).match_ended
    assert kept.seed_hex == "ab" * 16 and list(kept.moves[0].dice_rolled.dice) == [3, 1]
    assert await store.archived("nope") is None


async def _history(store: BoardRepository, player: str) -> list[events_pb2.TableEvent]:
    return [events_pb2.TableEvent.FromString(raw) for raw in await store.history(player, 10, 0)]


async def test_the_records_of_matches_archived_before_0005_are_filled_in(tmp_path: Path) -> None:
    """Issue 60's migration: the matches archived before it get each player's result from their
    archived end events (a test game, I-18, in no record), so a profile's record covers them."""
    from sqlalchemy import select

    from services.leaderboard.schema import match_players

    engine = sql_engine(f"sqlite+aiosqlite:///{tmp_path / 'lb.db'}")
    old_row = "INSERT INTO match_players (player_id, match_id, ended_ms) VALUES (?, ?, ?)"
    try:
        await migrate(engine, MIGRATIONS, "0004")
        ended = [
            match("w1", 9, info("wagered"), 1, "points", []),
            match("s3", 9, info("scored", test=True), 1, "points", []),
        ]
        async with engine.begin() as conn:
            for i, (_, raw) in enumerate(ended):
                await conn.exec_driver_sql(
                    "INSERT INTO matches (match_id, table_id, ended_ms, event) VALUES (?, ?, ?, ?)",
                    (f"m{i}", f"t{i}", MONDAY, raw),
                )
                for player in P:  # 0004's columns only
                    await conn.exec_driver_sql(old_row, (player, f"m{i}", MONDAY))
        await migrate(engine, MIGRATIONS)
        order = (match_players.c.match_id, match_players.c.player_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(select(match_players).order_by(*order))).all()
        assert [(r.match_id, r.player_id, r.profile, r.won) for r in rows] == [
            ("m0", "ann", "wagered", 0), ("m0", "bob", "wagered", 1),
            ("m1", "ann", "scored", None), ("m1", "bob", "scored", None),
        ]  # fmt: skip
        store = SqlBoardStore(engine, None)
        assert (await store.profile("bob")).record == {"wagered": (1, 0)}
    finally:
        await engine.dispose()
