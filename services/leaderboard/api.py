"""The gRPC servicer of bg.leaderboard.v1.LeaderboardService."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from bg.events.v1 import events_pb2
from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from engine.profiles import CPU_LEVELS
from services.common.clock import now_ms
from services.common.errors import InvalidArgument, NotFound, ServiceError, grpc_errors
from services.leaderboard import boards
from services.leaderboard.effects import ALL
from services.leaderboard.ports import BOARD_ORDER, BoardRepository, merged

Context = grpc.aio.ServicerContext[Any, Any]
BOARDS = BOARD_ORDER
LEVELS = ("players", *CPU_LEVELS)


class LeaderboardServicer(leaderboard_pb2_grpc.LeaderboardServiceServicer):
    def __init__(
        self,
        store: BoardRepository,
        season_ms: int = boards.WEEK_MS,
        replay: Callable[[str], Awaitable[dict[str, int]]] | None = None,
    ) -> None:
        self.store = store
        self.season_ms = season_ms
        self.replay = replay  # replays one player's archived events (consumer.replay_player)

    @grpc_errors
    async def ReplayPlayer(
        self, request: leaderboard_pb2.ReplayPlayerRequest, context: Context
    ) -> leaderboard_pb2.ReplayPlayerResponse:
        _player(request.player_id)
        if self.replay is None:
            raise ServiceError("NO_REPLAY", "this leaderboard has no replay")
        counts = await self.replay(request.player_id)
        return leaderboard_pb2.ReplayPlayerResponse(**counts)

    def season(self) -> str:
        return boards.season_of(now_ms(), self.season_ms)

    def _key(self, board: str, key: str) -> str:
        if board not in BOARDS:
            raise InvalidArgument(
                "UNKNOWN_BOARD", f"board is one of {', '.join(BOARDS)}", field="board"
            )
        if board == "rating":
            return ALL
        if board == "scored":
            if (key or "players") not in LEVELS:
                raise InvalidArgument(
                    "UNKNOWN_LEVEL", f"level is one of {', '.join(LEVELS)}", field="key"
                )
            return key or "players"
        return key or self.season()

    @grpc_errors
    async def Top(
        self, request: leaderboard_pb2.TopRequest, context: Context
    ) -> leaderboard_pb2.TopResponse:
        key = self._key(request.board, request.key)
        limit = request.limit or 10
        if not 1 <= limit <= 100:
            raise InvalidArgument("INVALID_LIMIT", "limit is 1..100", field="limit")
        if not 0 <= request.offset <= 1_000_000:
            raise InvalidArgument("INVALID_OFFSET", "offset is 0..1000000", field="offset")
        rows = await self.store.top(request.board, key, limit, request.offset)
        return leaderboard_pb2.TopResponse(
            key=key,
            entries=[leaderboard_pb2.Entry(rank=r, player_id=p, score=s) for r, p, s in rows],
            total=await self.store.size(request.board, key),
        )

    @grpc_errors
    async def Changes(
        self, request: leaderboard_pb2.ChangesRequest, context: Context
    ) -> leaderboard_pb2.ChangesResponse:
        _player(request.player_id)
        if not request.match_id or len(request.match_id) > 200:
            raise InvalidArgument("INVALID_ID", "match_id is 1..200 characters", field="match_id")
        found = merged(await self.store.changes(request.match_id, request.player_id))
        return leaderboard_pb2.ChangesResponse(
            changes=[
                leaderboard_pb2.Change(board=c.board, key=c.key, before=c.before, after=c.after)
                for c in found
            ]
        )

    @grpc_errors
    async def Rank(
        self, request: leaderboard_pb2.RankRequest, context: Context
    ) -> leaderboard_pb2.RankResponse:
        key = self._key(request.board, request.key)
        if not 0 <= request.around <= 10:
            raise InvalidArgument("INVALID_AROUND", "around is 0..10", field="around")
        rank, score, rows = await self.store.rank(
            request.board, key, request.player_id, request.around
        )
        return leaderboard_pb2.RankResponse(
            rank=rank,
            score=score,
            neighbours=[leaderboard_pb2.Entry(rank=r, player_id=p, score=s) for r, p, s in rows],
        )

    @grpc_errors
    async def Profile(
        self, request: leaderboard_pb2.ProfileRequest, context: Context
    ) -> leaderboard_pb2.ProfileResponse:
        season = self.season()
        p = await self.store.profile(request.player_id)
        league_rank, _, _ = await self.store.rank("league", season, request.player_id, 0)
        return leaderboard_pb2.ProfileResponse(
            player_id=request.player_id,
            trophies=p.trophies.get(ALL, 0),
            season_trophies=p.trophies.get(season, 0),
            rating=p.rating,
            experience=p.experience,
            scored_points=p.scored,
            league_diamonds=p.league.get(season, 0),
            league_rank=league_rank,
            season=season,
            tournament_wins=p.tournaments.get(ALL, 0),
            season_tournament_wins=p.tournaments.get(season, 0),
            rating_course=[
                leaderboard_pb2.RatingPoint(match_id=m, at_ms=at, rating=r)
                for m, at, r in p.rating_course
            ],
            record=[
                leaderboard_pb2.Record(profile=profile, wins=w, losses=lost)
                for profile, (w, lost) in sorted(p.record.items())
            ],
            rated_matches=p.rated_matches,
        )

    @grpc_errors
    async def History(
        self, request: leaderboard_pb2.HistoryRequest, context: Context
    ) -> leaderboard_pb2.HistoryResponse:
        _player(request.player_id)
        limit = request.limit or 20
        if not 1 <= limit <= 100:
            raise InvalidArgument("INVALID_LIMIT", "limit is 1..100", field="limit")
        rows = await self.store.history(request.player_id, limit, request.before_ms)
        return leaderboard_pb2.HistoryResponse(matches=[_summary(_event(raw)) for raw in rows])

    @grpc_errors
    async def ArchivedMatch(
        self, request: leaderboard_pb2.ArchivedMatchRequest, context: Context
    ) -> leaderboard_pb2.ArchivedMatchResponse:
        _player(request.player_id)
        raw = await self.store.archived(request.match_id[:200])
        event = None if raw is None else _event(raw)
        summary = None if event is None else _summary(event)
        if summary is None or request.player_id not in summary.player_ids:
            # The same answer whether the match is unknown or someone else's.
            raise NotFound("UNKNOWN_MATCH", "no archived match of yours with this id")
        end = getattr(event, event.WhichOneof("body"))  # type: ignore[union-attr]
        return leaderboard_pb2.ArchivedMatchResponse(
            summary=summary, seed_hex=end.seed_hex, fingerprint=end.fingerprint, moves=end.moves
        )


def _player(player_id: str) -> None:
    if not player_id or len(player_id) > 100:
        raise InvalidArgument("INVALID_ID", "player_id is 1..100 characters", field="player_id")


def _event(raw: bytes) -> events_pb2.TableEvent:
    event = events_pb2.TableEvent()
    event.ParseFromString(raw)
    return event


def _summary(event: events_pb2.TableEvent) -> leaderboard_pb2.MatchSummary:
    kind = event.WhichOneof("body")
    end = getattr(event, kind)
    ended = kind == "match_ended"
    return leaderboard_pb2.MatchSummary(
        match_id=event.match_id,
        table_id=event.table_id,
        profile=end.info.profile,
        player_ids=end.info.player_ids,
        winner_seat=end.winner_seat if ended else -1,
        reason=end.reason,
        score=end.score if ended else [],
        ended_ms=event.at_ms,
    )
