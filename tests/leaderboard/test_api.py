"""The leaderboard's API over a real gRPC server on loopback, its boards on the in-memory store
(issue 17: the core's tests need no SQL or Redis): ranks and neighbours, a player's profile for
the current season (I-13), history only of one's own matches, and a typed error for each bad
request."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from bg.events.v1 import events_pb2
from bg.leaderboard.v1 import leaderboard_pb2 as lb
from bg.leaderboard.v1 import leaderboard_pb2_grpc
from services.common.clock import now_ms
from services.leaderboard import boards
from services.leaderboard.api import LeaderboardServicer
from services.leaderboard.effects import ALL, Delta, Effects
from tests.helpers import error_of
from tests.leaderboard.memory_boards import MemoryBoardStore


@pytest.fixture
async def boards_store() -> MemoryBoardStore:
    store = MemoryBoardStore()
    season = boards.season_of(now_ms())
    for i, (player, trophies) in enumerate((("ann", 60), ("bob", 40), ("cy", 40), ("di", 10))):
        fx = Effects([Delta("trophies", ALL, player, trophies)])
        await store.apply(f"e{i}", 0, fx)
    await store.apply("l1", 0, Effects([Delta("league", season, "ann", 500)]))
    await store.apply("r1", 0, Effects(rated=("bob", "ann", 3)))
    return store


@pytest.fixture
async def stub(
    boards_store: MemoryBoardStore,
) -> AsyncIterator[leaderboard_pb2_grpc.LeaderboardServiceAsyncStub]:
    server = grpc.aio.server()
    leaderboard_pb2_grpc.add_LeaderboardServiceServicer_to_server(
        LeaderboardServicer(boards_store), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield leaderboard_pb2_grpc.LeaderboardServiceStub(channel)
    await server.stop(None)


async def test_top_rank_and_profile(stub: leaderboard_pb2_grpc.LeaderboardServiceAsyncStub) -> None:
    top = await stub.Top(lb.TopRequest(board="trophies", key="all", limit=3))
    assert [(e.rank, e.player_id, e.score) for e in top.entries] == [
        (1, "ann", 60.0), (2, "cy", 40.0), (3, "bob", 40.0),
    ]  # fmt: skip
    rank = await stub.Rank(lb.RankRequest(board="trophies", key="all", player_id="bob", around=1))
    assert rank.rank == 3 and rank.score == 40.0
    assert [e.player_id for e in rank.neighbours] == ["cy", "bob", "di"]
    assert (await stub.Rank(lb.RankRequest(board="trophies", key="all", player_id="zed"))).rank == 0
    ann = await stub.Profile(lb.ProfileRequest(player_id="ann"))
    assert ann.trophies == 60 and ann.league_diamonds == 500 and ann.league_rank == 1
    assert ann.season == boards.season_of(now_ms())
    assert (
        ann.rating
        < boards.START_RATING
        < (await stub.Profile(lb.ProfileRequest(player_id="bob"))).rating
    )
    rating = await stub.Top(lb.TopRequest(board="rating"))
    assert rating.key == ALL and [e.player_id for e in rating.entries] == ["bob", "ann"]
    page = await stub.Top(lb.TopRequest(board="trophies", key="all", limit=2, offset=2))
    assert page.total == 4 and [(e.rank, e.player_id) for e in page.entries] == [
        (3, "bob"), (4, "di"),
    ]  # fmt: skip


async def test_what_a_match_changed_comes_merged_by_board(
    stub: leaderboard_pb2_grpc.LeaderboardServiceAsyncStub, boards_store: MemoryBoardStore
) -> None:
    """Issue 60: a match's games and its end each add trophies; the answer is one line a board,
    from before the first to after the last; a rated match's rating before and after."""
    for i, value in enumerate((20, 10, 30)):
        fx = Effects([Delta("trophies", ALL, "di", value)], source="m9")
        await boards_store.apply(f"m9:{i}", 0, fx)
    await boards_store.apply("m9:r", 0, Effects(rated=("di", "ann", 1), source="m9"))
    got = await stub.Changes(lb.ChangesRequest(match_id="m9", player_id="di"))
    assert [(c.board, c.key, c.before, c.after) for c in got.changes] == [
        ("trophies", ALL, 10.0, 70.0), ("rating", ALL, 1500.0, got.changes[1].after),
    ]  # fmt: skip
    assert got.changes[1].after > 1500.0
    ann = await stub.Profile(lb.ProfileRequest(player_id="ann"))
    assert [p.match_id for p in ann.rating_course] == ["", "m9"] and ann.rated_matches == 2
    assert ann.rating_course[-1].rating == ann.rating
    assert not (await stub.Changes(lb.ChangesRequest(match_id="m9", player_id="bob"))).changes


async def test_archived_matches_are_their_players_alone(
    stub: leaderboard_pb2_grpc.LeaderboardServiceAsyncStub, boards_store: MemoryBoardStore
) -> None:
    ended = events_pb2.TableEvent(event_id="t1:9", table_id="t1", match_id="m1", at_ms=5)
    ended.match_ended.info.profile = "casual"
    ended.match_ended.info.player_ids.extend(["ann", "bob"])
    ended.match_ended.winner_seat = 0
    ended.match_ended.seed_hex = "cd" * 16
    assert await boards_store.archive(ended)
    assert not await boards_store.archive(ended)  # once
    history = await stub.History(lb.HistoryRequest(player_id="bob"))
    assert [(m.match_id, m.winner_seat) for m in history.matches] == [("m1", 0)]
    got = await stub.ArchivedMatch(lb.ArchivedMatchRequest(player_id="ann", match_id="m1"))
    assert got.seed_hex == "cd" * 16 and list(got.summary.player_ids) == ["ann", "bob"]
    for who, match in (("cy", "m1"), ("ann", "nope")):  # someone else's, or unknown: alike
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ArchivedMatch(lb.ArchivedMatchRequest(player_id=who, match_id=match))
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        assert error_of(refused.value).code == "UNKNOWN_MATCH"


@pytest.mark.parametrize(
    ("call", "request_", "code"),
    [
        ("Top", lb.TopRequest(board="gold"), "UNKNOWN_BOARD"),
        ("Top", lb.TopRequest(board="scored", key="grandmaster"), "UNKNOWN_LEVEL"),
        ("Top", lb.TopRequest(board="trophies", limit=101), "INVALID_LIMIT"),
        ("Top", lb.TopRequest(board="trophies", offset=-1), "INVALID_OFFSET"),
        ("Changes", lb.ChangesRequest(match_id="m1", player_id=""), "INVALID_ID"),
        ("Changes", lb.ChangesRequest(match_id="", player_id="ann"), "INVALID_ID"),
        ("Rank", lb.RankRequest(board="trophies", player_id="ann", around=11), "INVALID_AROUND"),
        ("History", lb.HistoryRequest(player_id=""), "INVALID_ID"),
        ("History", lb.HistoryRequest(player_id="ann", limit=101), "INVALID_LIMIT"),
        ("ArchivedMatch", lb.ArchivedMatchRequest(player_id="x" * 101), "INVALID_ID"),
        ("ReplayPlayer", lb.ReplayPlayerRequest(player_id="ann"), "NO_REPLAY"),
    ],
)
async def test_bad_requests_get_typed_errors_and_change_nothing(
    stub: leaderboard_pb2_grpc.LeaderboardServiceAsyncStub,
    boards_store: MemoryBoardStore,
    call: str,
    request_: object,
    code: str,
) -> None:
    before = (dict(boards_store.scores), dict(boards_store.ratings), set(boards_store.processed))
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await getattr(stub, call)(request_)
    assert error_of(refused.value).code == code
    assert (boards_store.scores, boards_store.ratings, boards_store.processed) == before
