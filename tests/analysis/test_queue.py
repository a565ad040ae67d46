"""The analysis queue on real SQLite and PostgreSQL (issue 28, req. 3): a match is queued once
however often its end event arrives, two workers never hold one match, a worker that died lets
its match go when the lease ends, the result is stored once even when two finish it, a record
that cannot be analysed is stored as failed (so is one that killed its worker every time), and
the error-rate trend reads what was stored. The worker counts what it did."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from bg.events.v1 import events_pb2
from services.analysis.adapters.sql_analyses import SqlAnalyses
from services.analysis.app import MIGRATIONS
from services.analysis.consumer import Enqueuer
from services.analysis.metrics import AnalysisMetrics
from services.analysis.worker import Worker
from services.common.connections import sql_engine
from services.common.migrate import migrate
from services.contracts.event_records import commit_record
from services.contracts.topics import TABLE_EVENTS
from tests.analysis.servers import serving
from tests.helpers import error_of, sql_url

pytestmark = pytest.mark.integration
LEASE = 60_000


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlAnalyses]:
    engine = sql_engine(await sql_url(request, tmp_path, "analysis"))
    await migrate(engine, MIGRATIONS)
    yield SqlAnalyses(engine)
    await engine.dispose()


@pytest.fixture
async def api(store: SqlAnalyses) -> AsyncIterator[analysis_pb2_grpc.AnalysisServiceAsyncStub]:
    async with serving(store) as stub:
        yield stub


def _end(match_id: str, at_ms: int = 1000, players: tuple[str, str] = ("ann", "bob")) -> bytes:
    moves = [
        events_pb2.TableEvent(game_started=events_pb2.GameStarted(game_no=1, score=[0, 0])),
        events_pb2.TableEvent(opening_roll=events_pb2.OpeningRoll(dice=[3, 1], starter=0)),
        events_pb2.TableEvent(turn_ended=events_pb2.TurnEnded(seat=0, steps=[
            events_pb2.Step(**{"from": 8, "to": 5}), events_pb2.Step(**{"from": 6, "to": 5})])),
    ]  # fmt: skip
    info = events_pb2.MatchInfo(profile="casual", player_ids=list(players), match_length=1)
    end = events_pb2.TableEvent(
        event_id=f"{match_id}:9", table_id=f"t-{match_id}", match_id=match_id, at_ms=at_ms,
        match_ended=events_pb2.MatchEnded(info=info, winner_seat=0, moves=moves),
    )  # fmt: skip
    return end.SerializeToString()


async def _queue(store: SqlAnalyses, match_id: str, now: int) -> bool:
    raw = _end(match_id)
    return await store.enqueue(match_id, f"t-{match_id}", "casual", 1000, raw, now)


async def test_a_match_is_queued_once_and_claimed_by_one_worker_at_a_time(
    store: SqlAnalyses,
) -> None:
    assert await _queue(store, "m1", 10) and not await _queue(store, "m1", 11)
    assert await _queue(store, "m2", 20)
    assert await store.backlog() == (2, 10)
    first = await store.claim(100, LEASE)
    second = await store.claim(100, LEASE)
    assert first is not None and second is not None
    assert (first.match_id, second.match_id) == ("m1", "m2")  # oldest first
    assert await store.claim(100, LEASE) is None  # both are held
    # The first worker dies: its lease ends and another takes the match again.
    again = await store.claim(100 + LEASE + 1, LEASE)
    assert again is not None and (again.match_id, again.attempts) == ("m1", 2)


async def test_the_result_is_stored_once_and_the_trend_reads_it(store: SqlAnalyses) -> None:
    await _queue(store, "m1", 10)
    found = analysis_pb2.MatchAnalysis(
        match_id="m1", table_id="t-m1", player_ids=["ann", "bob"], ended_ms=1000,
        state=analysis_pb2.ANALYSIS_STATE_DONE,
        players=[analysis_pb2.PlayerSummary(player_id="ann", decisions=4, error_rate=20.0),
                 analysis_pb2.PlayerSummary(player_id="bob", decisions=0),
                 analysis_pb2.PlayerSummary(player_id="cy", decisions=3, error_rate=9.0)],
    )  # fmt: skip
    trended = ("ann", "bob")  # cy: not trended (a computer seat, say)
    assert await store.finish(found, "casual", trended, 500)
    assert not await store.finish(found, "casual", trended, 600)  # a slower worker's: dropped
    assert await store.claim(10**9, LEASE) is None  # done is never taken again
    assert not await _queue(store, "m1", 700)  # nor queued again by a redelivered end event
    (row,) = await store.trend("ann", 10)
    assert (row.match_id, row.decisions, row.profile) == ("m1", 4, "casual")
    assert row.error_rate == pytest.approx(20.0)
    assert await store.trend("bob", 10) == []  # no decisions, no row
    assert await store.trend("cy", 10) == []
    assert await store.backlog() == (0, 0)


async def test_the_worker_analyses_a_match_fails_a_bad_record_and_counts(
    store: SqlAnalyses, api: analysis_pb2_grpc.AnalysisServiceAsyncStub
) -> None:
    registry = CollectorRegistry()
    metrics = AnalysisMetrics(registry)
    worker = Worker(store, lease_s=60, attempts=2, metrics=metrics)
    enqueuer = Enqueuer(store, metrics, worker.woken)
    value, headers = commit_record([_end("good", 2000)], ["match_ended"])
    assert await enqueuer.handle_record(TABLE_EVENTS, value, headers) == ["queued"]
    assert await enqueuer.handle_record(TABLE_EVENTS, value, headers) == ["duplicate"]
    assert worker.woken.is_set()
    bad = events_pb2.TableEvent.FromString(_end("bad", 3000))
    bad.match_ended.moves[2].turn_ended.steps[0].to = 2  # no die makes 8/2
    await enqueuer.handle_event(bad)
    # Records of other kinds are skipped by their header, undecoded.
    other, kinds = commit_record([b"\xff not an event"], ["dice_rolled"])
    assert await enqueuer.handle_record(TABLE_EVENTS, other, kinds) == []

    before_ms = time.time() * 1000 - 1
    assert await worker.step() and await worker.step() and not await worker.step()
    await enqueuer.handle_event(events_pb2.TableEvent.FromString(_end("later", 4000)))
    kept = await store.get("good")
    assert kept is not None and kept.result is not None
    assert analysis_pb2.MatchAnalysis.FromString(kept.result).luck_pending  # judged, no luck yet
    good = await api.GetAnalysis(analysis_pb2.GetAnalysisRequest(match_id="good"))
    assert good.state == analysis_pb2.ANALYSIS_STATE_DONE and len(good.decisions) == 1
    # Issue 61, item 6: the luck is worked out at the first read, and kept.
    assert not good.luck_pending and good.decisions[0].luck != 0
    assert good.players[0].luck == pytest.approx(good.decisions[0].luck)
    kept = await store.get("good")
    assert kept is not None and kept.result is not None
    assert not analysis_pb2.MatchAnalysis.FromString(kept.result).luck_pending
    again = await api.GetAnalysis(analysis_pb2.GetAnalysisRequest(match_id="good"))
    assert again.decisions[0].luck == good.decisions[0].luck
    assert good.decisions[0].move_index == 2 and good.decisions[0].played == "8/5 6/5"
    failed = await api.GetAnalysis(analysis_pb2.GetAnalysisRequest(match_id="bad"))
    assert failed.state == analysis_pb2.ANALYSIS_STATE_FAILED
    assert list(failed.player_ids) == ["ann", "bob"]  # its players may read why (the gateway)
    assert "not a legal play" in failed.failure
    # Issue 41, item 9: analysed_ms is 0 only until done (or failed), then when it was.
    assert before_ms <= good.analysed_ms <= time.time() * 1000
    assert before_ms <= failed.analysed_ms <= time.time() * 1000
    queued = await api.GetAnalysis(analysis_pb2.GetAnalysisRequest(match_id="later"))
    assert queued.state == analysis_pb2.ANALYSIS_STATE_QUEUED and queued.analysed_ms == 0
    assert registry.get_sample_value("bg_analysis_decisions_total") == 1
    assert registry.get_sample_value("bg_analysis_matches_total", {"result": "done"}) == 1
    assert registry.get_sample_value("bg_analysis_matches_total", {"result": "failed"}) == 1
    await worker.gauge()
    assert registry.get_sample_value("bg_analysis_backlog") == 1  # "later", still queued
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await api.GetAnalysis(analysis_pb2.GetAnalysisRequest(match_id="never"))
    assert error_of(unknown.value).code == "UNKNOWN_MATCH"
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await api.GetAnalysis(analysis_pb2.GetAnalysisRequest(match_id=""))
    assert (error_of(missing.value).code, error_of(missing.value).field) == ("MISSING", "match_id")
    with pytest.raises(grpc.aio.AioRpcError) as too_many:
        await api.PlayerTrend(analysis_pb2.PlayerTrendRequest(player_id="ann", limit=500))
    assert error_of(too_many.value).code == "INVALID_LIMIT"
    trend = await api.PlayerTrend(analysis_pb2.PlayerTrendRequest(player_id="ann"))
    assert trend.decisions == 1 and trend.band and len(trend.matches) == 1


async def test_a_queued_match_says_how_many_are_ahead(
    store: SqlAnalyses, api: analysis_pb2_grpc.AnalysisServiceAsyncStub
) -> None:
    for n, match in enumerate(("a", "b", "c")):
        await _queue(store, match, 10 + n)
    found = await api.GetAnalysis(analysis_pb2.GetAnalysisRequest(match_id="c"))
    assert found.state == analysis_pb2.ANALYSIS_STATE_QUEUED and found.ahead == 2
    assert list(found.player_ids) == ["ann", "bob"]


async def test_a_match_that_kills_its_worker_every_time_is_given_up(store: SqlAnalyses) -> None:
    await _queue(store, "poison", 10)
    worker = Worker(store, lease_s=0.001, attempts=2)
    for _ in range(2):  # taken, and the worker "dies" each time (its lease simply runs out)
        assert await store.claim(_ms(), 1) is not None
        await asyncio.sleep(0.01)
    assert await worker.step()
    stored = await store.get("poison")
    assert stored is not None and stored.state == "failed"


def _ms() -> int:
    return int(time.time() * 1000)


async def test_a_replica_started_again_lets_go_of_the_match_it_held(store: SqlAnalyses) -> None:
    await _queue(store, "m1", 10)
    held = await store.claim(100, LEASE, "analysis-1")
    assert held is not None and await store.claim(100, LEASE, "analysis-2") is None
    assert await store.release("analysis-2") == 0  # not its lease
    assert await store.release("analysis-1") == 1  # killed -9 and back: its claim is void
    again = await store.claim(101, LEASE, "analysis-1")
    assert again is not None and (again.match_id, again.attempts) == ("m1", 2)


async def test_a_test_game_and_a_computer_seat_join_no_error_rate_trend(store: SqlAnalyses) -> None:
    """I-19: a scored test game is recorded nowhere: analysed for its players to read, but no
    error-rate row; a computer seat has none either (the trend is a fair-play signal of people)."""
    worker = Worker(store, lease_s=60, attempts=2)
    enqueuer = Enqueuer(store)
    practice = events_pb2.TableEvent.FromString(_end("practice", 1000))
    practice.match_ended.info.test_game = True
    vs_cpu = events_pb2.TableEvent.FromString(_end("vs-cpu", 2000, ("ann", "cpu-easy-t1")))
    for end in (practice, vs_cpu):
        assert await enqueuer.handle_event(end) == "queued"
    assert await worker.step() and await worker.step()
    assert (await store.get("practice")).state == "done"  # type: ignore[union-attr]
    (row,) = await store.trend("ann", 10)
    assert row.match_id == "vs-cpu"
    assert await store.trend("cpu-easy-t1", 10) == []


async def test_a_players_error_rate_is_placed_among_the_population(
    store: SqlAnalyses, api: analysis_pb2_grpc.AnalysisServiceAsyncStub
) -> None:
    """Issue 60, item 8: where a player's error rate stands against the other players with an
    analysed record (20 decisions or more over all their matches; fewer do not count yet)."""
    rates = {"ann": 5.0, "bob": 10.0, "cy": 30.0, "dee": 2.0}
    decisions = {"ann": 25, "bob": 10, "cy": 40, "dee": 3}  # dee's 3: not in the population
    for n, player in enumerate(rates):
        match_id = f"p{n}"
        await _queue(store, match_id, 10 + n)
        found = analysis_pb2.MatchAnalysis(
            match_id=match_id, player_ids=[player, "cpu-x"], ended_ms=1000 + n,
            state=analysis_pb2.ANALYSIS_STATE_DONE,
            players=[analysis_pb2.PlayerSummary(
                player_id=player, decisions=decisions[player], error_rate=rates[player])],
        )  # fmt: skip
        assert await store.finish(found, "casual", (player,), 500 + n)
    # bob's second match takes him to 20 decisions: 10 at 10.0 and 10 at 20.0 make 15.0.
    await _queue(store, "p9", 20)
    second = analysis_pb2.MatchAnalysis(
        match_id="p9", player_ids=["bob", "cpu-x"], ended_ms=2000,
        state=analysis_pb2.ANALYSIS_STATE_DONE,
        players=[analysis_pb2.PlayerSummary(player_id="bob", decisions=10, error_rate=20.0)],
    )  # fmt: skip
    assert await store.finish(second, "casual", ("bob",), 600)
    assert await store.population(20) == pytest.approx([5.0, 15.0, 30.0])
    bob = await api.PlayerTrend(analysis_pb2.PlayerTrendRequest(player_id="bob"))
    assert bob.error_rate == pytest.approx(15.0)
    assert bob.compared == 3 and bob.better_than == pytest.approx(1 / 3)  # only cy's is higher
    dee = await api.PlayerTrend(analysis_pb2.PlayerTrendRequest(player_id="dee"))
    assert dee.compared == 3 and dee.better_than == pytest.approx(1.0)  # better than all three
    nobody = await api.PlayerTrend(analysis_pb2.PlayerTrendRequest(player_id="eve"))
    assert (nobody.decisions, nobody.compared, nobody.better_than) == (0, 0, 0.0)
