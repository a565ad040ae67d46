"""The fair-play review queue's records on real SQLite and PostgreSQL (issue 61, items 2 and
4): a player's test moves on once per analysed match, a flag is raised once when it reaches the
threshold and keeps its evidence (every match since the test last stood at 0), an operator's
decision is recorded once, and a cleared player is not flagged again on the same evidence."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from services.analysis import fair_play
from services.analysis.adapters.sql_analyses import SqlAnalyses
from services.analysis.app import MIGRATIONS
from services.analysis.fair_play import MatchEvidence
from services.common.connections import sql_engine
from services.common.migrate import migrate
from tests.analysis.servers import serving
from tests.helpers import error_of, sql_url

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgres"])
async def api(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[SqlAnalyses, analysis_pb2_grpc.AnalysisServiceAsyncStub]]:
    engine = sql_engine(await sql_url(request, tmp_path, "analysis"))
    await migrate(engine, MIGRATIONS)
    store = SqlAnalyses(engine)
    async with serving(store) as stub:
        yield store, stub
    await engine.dispose()


def _evidence(score: float) -> MatchEvidence:
    return MatchEvidence(
        decisions=20, close=8, close_best=8, clear=12, clear_best=12, choice=score / 2,
        timing=score / 2, score=score, close_think_ms=4000, clear_think_ms=4100,
        checker_lost=0.02, cube_decisions=1, cube_lost=0.0,
    )  # fmt: skip


async def _match(store: SqlAnalyses, match_id: str, score: float, ended_ms: int) -> bool:
    await store.enqueue(match_id, f"t-{match_id}", "wagered", ended_ms, b"", ended_ms)
    found = analysis_pb2.MatchAnalysis(
        match_id=match_id, table_id=f"t-{match_id}", player_ids=["ann", "bob"],
        ended_ms=ended_ms, state=analysis_pb2.ANALYSIS_STATE_DONE,
    )  # fmt: skip
    return await store.finish(found, "wagered", ("ann",), ended_ms, {"ann": _evidence(score)})


async def test_a_flag_is_raised_once_with_its_evidence_and_a_cleared_player_starts_again(
    api: tuple[SqlAnalyses, analysis_pb2_grpc.AnalysisServiceAsyncStub],
) -> None:
    store, stub = api
    step = fair_play.THRESHOLD / 3 + 0.1
    assert await _match(store, "m0", -50.0, 1000)  # a clear innocent match: the test stays at 0
    for i in range(1, 4):  # three matches each a third of the threshold: flagged at the third
        assert await _match(store, f"m{i}", step, 1000 + i)
    assert not await store.finish(
        analysis_pb2.MatchAnalysis(match_id="m3", player_ids=["ann", "bob"]),
        "wagered", ("ann",), 9, {"ann": _evidence(step)},
    )  # a redelivered finish counts nothing  # fmt: skip
    assert await _match(store, "m4", step, 1004)  # more evidence: still one open flag
    queue = await stub.ListFlags(analysis_pb2.ListFlagsRequest())
    assert queue.threshold == fair_play.THRESHOLD
    (flag,) = queue.flags
    assert (flag.player_id, flag.state, flag.decided_by) == ("ann", "open", "")
    assert flag.statistic == pytest.approx(3 * step)
    # The evidence: the run from its first match (not m0, which left the test at 0) to now.
    assert [m.match_id for m in flag.matches] == ["m1", "m2", "m3", "m4"]
    assert flag.matches[-1].statistic == pytest.approx(4 * step)
    assert (flag.matches[0].close, flag.matches[0].close_best, flag.matches[0].profile) == (
        8, 8, "wagered",
    )  # fmt: skip
    assert flag.matches[0].checker_error_rate == pytest.approx(1.0)

    decided = await stub.DecideFlag(
        analysis_pb2.RecordDecisionRequest(
            flag_id=flag.flag_id, decision="clear", operator="olga", reason="a known strong player"
        )
    )
    assert (decided.state, decided.decided_by, decided.reason) == (
        "cleared", "olga", "a known strong player",
    )  # fmt: skip
    assert [m.match_id for m in decided.matches] == ["m1", "m2", "m3", "m4"]
    assert (await stub.ListFlags(analysis_pb2.ListFlagsRequest())).flags == []
    # Not flagged again on the same evidence: the test starts from 0, two more such matches
    # stay below the threshold; a third raises a new flag on new matches only.
    assert await _match(store, "m5", step, 1005) and await _match(store, "m6", step, 1006)
    assert (await stub.ListFlags(analysis_pb2.ListFlagsRequest())).flags == []
    assert await _match(store, "m7", step, 1007)
    (again,) = (await stub.ListFlags(analysis_pb2.ListFlagsRequest())).flags
    assert again.flag_id != flag.flag_id
    assert [m.match_id for m in again.matches] == ["m5", "m6", "m7"]
    mine = await stub.PlayerEvidence(analysis_pb2.PlayerTrendRequest(player_id="ann", limit=3))
    assert [m.match_id for m in mine.matches] == ["m7", "m6", "m5"]  # newest first
    assert mine.statistic == pytest.approx(3 * step) and mine.open_flag == again.flag_id
    assert mine.threshold == fair_play.THRESHOLD
    nobody = await stub.PlayerEvidence(analysis_pb2.PlayerTrendRequest(player_id="zed"))
    assert (list(nobody.matches), nobody.statistic, nobody.open_flag) == ([], 0.0, 0)
    every = await stub.ListFlags(analysis_pb2.ListFlagsRequest(state="all", player_id="ann"))
    assert [f.state for f in every.flags] == ["cleared", "open"]
    assert (await stub.ListFlags(analysis_pb2.ListFlagsRequest(player_id="bob"))).flags == []


async def test_bad_decisions_and_listings_are_refused_and_change_nothing(
    api: tuple[SqlAnalyses, analysis_pb2_grpc.AnalysisServiceAsyncStub],
) -> None:
    store, stub = api
    for i in range(3):
        await _match(store, f"m{i}", fair_play.THRESHOLD / 2, 1000 + i)
    (flag,) = (await stub.ListFlags(analysis_pb2.ListFlagsRequest())).flags

    async def refused(request: analysis_pb2.RecordDecisionRequest) -> str:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.DecideFlag(request)
        return str(error_of(err.value).code)

    asked = analysis_pb2.RecordDecisionRequest(flag_id=flag.flag_id, operator="olga", reason="r")
    asked.decision = "pardon"
    assert await refused(asked) == "INVALID_DECISION"
    asked.decision, asked.flag_id = "restrict", 999
    assert await refused(asked) == "UNKNOWN_FLAG"
    asked.flag_id, asked.reason = flag.flag_id, ""
    assert await refused(asked) == "MISSING"
    (still,) = (await stub.ListFlags(analysis_pb2.ListFlagsRequest())).flags
    assert still.state == "open"
    asked.reason = "assisted: flat times, every close decision best"
    assert (await stub.DecideFlag(asked)).state == "restricted"
    assert await refused(asked) == "ALREADY_DECIDED"
    with pytest.raises(grpc.aio.AioRpcError) as bad_state:
        await stub.ListFlags(analysis_pb2.ListFlagsRequest(state="sus"))
    assert error_of(bad_state.value).code == "INVALID_STATE"
