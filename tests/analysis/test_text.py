"""`bgcluster play`'s `analysis` lines (issue 28): each player's summary, every decision marked
doubtful or worse with the roll, the play and the best, and where a queued or failed one stands."""

from __future__ import annotations

from bg.analysis.v1 import analysis_pb2
from client.analysis_text import analysis_lines

NAMES = {"p1": "ann", "p2": "bob"}


def test_a_done_analysis_lists_the_summaries_and_the_marked_decisions_only() -> None:
    found = analysis_pb2.MatchAnalysis(
        match_id="t-1", player_ids=["p1", "p2"], state=analysis_pb2.ANALYSIS_STATE_DONE,
        decisions=[
            analysis_pb2.Decision(game=1, seat=0, kind="move", dice=[6, 5], played="13/2",
                                  best="24/13", lost=0.262, mark="very bad"),
            analysis_pb2.Decision(game=1, seat=1, kind="move", dice=[3, 1], played="8/5 6/5",
                                  best="8/5 6/5"),
            analysis_pb2.Decision(game=1, seat=1, kind="drop", played="drop", best="take",
                                  lost=0.09, mark="bad"),
        ],
        players=[
            analysis_pb2.PlayerSummary(player_id="p1", decisions=1, error_rate=262.0,
                                       band="awful", very_bad=1, luck=0.12),
            analysis_pb2.PlayerSummary(player_id="p2", decisions=2, error_rate=45.0,
                                       band="awful", bad=1, luck=-0.12),
        ],
    )  # fmt: skip
    assert analysis_lines(found, NAMES) == [
        "analysis of t-1:",
        "  ann: error rate 262.0 (awful), 1 decision, 1 very bad, luck +0.12",
        "  bob: error rate 45.0 (awful), 2 decisions, 1 bad, luck -0.12",
        "  game 1, ann 6-5: 13/2, best 24/13 (-0.262, very bad)",
        "  game 1, bob: drop, best take (-0.090, bad)",
    ]


def test_queued_failed_and_clean_analyses_say_so() -> None:
    queued = analysis_pb2.MatchAnalysis(
        match_id="t-2", state=analysis_pb2.ANALYSIS_STATE_QUEUED, ahead=1
    )
    assert analysis_lines(queued, NAMES) == [
        "the analysis of t-2 is in progress (1 match ahead): ask again shortly"
    ]
    failed = analysis_pb2.MatchAnalysis(
        match_id="t-3", state=analysis_pb2.ANALYSIS_STATE_FAILED, failure="gave up"
    )
    assert analysis_lines(failed, NAMES) == ["t-3 could not be analysed: gave up"]
    clean = analysis_pb2.MatchAnalysis(
        match_id="t-4", player_ids=["p1", "p2"], state=analysis_pb2.ANALYSIS_STATE_DONE,
        players=[analysis_pb2.PlayerSummary(player_id="p1"),
                 analysis_pb2.PlayerSummary(player_id="p2")],
    )  # fmt: skip
    assert analysis_lines(clean, NAMES)[-1] == "  no decision marked doubtful or worse"
