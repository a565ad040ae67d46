"""Applies events to the boards: SQL is the record, Redis sorted sets the ranks.

Each event is one SQL transaction that first records its id (a repeated id changes nothing),
then adds its deltas. After the commit, the touched Redis members are set to the SQL values
(absolute, so repeating it is harmless); `resync` rebuilds every sorted set from SQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bg.events.v1 import events_pb2
from engine.vocabulary import EndReason, GameResult
from services.common.vocabulary import from_proto
from services.leaderboard import boards
from services.leaderboard.schema import match_players, matches, processed, ratings, scores

CPU_PREFIX = "cpu-"
ALL = "all"


def zkey(board: str, key: str) -> str:
    return f"lb:{board}:{key}"


@dataclass
class Delta:
    board: str
    key: str
    player_id: str
    value: int


@dataclass
class Effects:
    deltas: list[Delta] = field(default_factory=list)
    rated: tuple[str, str, int] | None = None  # (winner, loser, match length)


def table_effects(event: events_pb2.TableEvent, season_ms: int) -> Effects:
    """What a table event changes on the boards."""
    fx = Effects()
    kind = event.WhichOneof("body")
    season = boards.season_of(event.at_ms, season_ms)
    if kind == "game_ended":
        g = event.game_ended
        result = from_proto(g.result, GameResult)
        if g.info.profile == "wagered" and g.info.rated and result is not None:
            winner = g.info.player_ids[g.winner_seat]
            value = boards.game_trophies(result)
            fx.deltas += [
                Delta("trophies", ALL, winner, value),
                Delta("trophies", season, winner, value),
            ]
    elif kind == "match_ended":
        m = event.match_ended
        info = m.info
        players = list(info.player_ids)
        winner = players[m.winner_seat]
        if info.profile == "wagered" and info.rated:
            won = [
                r
                for g in m.games
                if g.winner_seat == m.winner_seat and (r := from_proto(g.result, GameResult))
            ]
            reason = from_proto(m.reason, EndReason)
            bonus = reason and boards.match_trophies(info.match_length, reason, won)
            if bonus:
                fx.deltas += [
                    Delta("trophies", ALL, winner, bonus),
                    Delta("trophies", season, winner, bonus),
                ]
        elif info.profile == "scored" and not info.test_game:
            level = info.level or "players"
            for player, points in zip(players, m.scored_points, strict=False):
                if points and not player.startswith(CPU_PREFIX):
                    fx.deltas.append(Delta("scored", level, player, points))
        elif (
            info.profile == "casual"
            and info.rated
            and not any(p.startswith(CPU_PREFIX) for p in players)
        ):
            fx.rated = (winner, players[1 - m.winner_seat], info.match_length)
    return fx


def wallet_effects(event: events_pb2.WalletEvent, season_ms: int) -> Effects:
    """I-13: a settled wagered match adds the winner's net gain to the season's league."""
    fx = Effects()
    if event.kind == "settle" and event.winner_id:
        fx.deltas.append(
            Delta(
                "league", boards.season_of(event.at_ms, season_ms), event.winner_id, event.net_gain
            )
        )
    return fx


class BoardStore:
    def __init__(self, engine: AsyncEngine, redis: Any, season_ms: int = boards.WEEK_MS) -> None:
        self.engine = engine
        self.redis = redis
        self.season_ms = season_ms
        self._insert = sqlite.insert if engine.dialect.name == "sqlite" else postgresql.insert

    async def archive(self, event: events_pb2.TableEvent) -> bool:
        """Keep a finished match (its end event, with every move) for its players; once."""
        kind = event.WhichOneof("body")
        players = list(getattr(event, kind).info.player_ids)
        async with self.engine.begin() as conn:
            result = await conn.execute(
                self._insert(matches)
                .values(
                    match_id=event.match_id,
                    table_id=event.table_id,
                    ended_ms=event.at_ms,
                    event=event.SerializeToString(),
                )
                .on_conflict_do_nothing()
            )
            if result.rowcount != 1:
                return False
            for player in players:
                await conn.execute(
                    self._insert(match_players)
                    .values(player_id=player, match_id=event.match_id, ended_ms=event.at_ms)
                    .on_conflict_do_nothing()
                )
        return True

    async def history(self, player: str, limit: int, before_ms: int) -> list[bytes]:
        """A player's archived match end events, newest first."""
        query = (
            select(matches.c.event)
            .join(match_players, match_players.c.match_id == matches.c.match_id)
            .where(match_players.c.player_id == player)
            .order_by(match_players.c.ended_ms.desc())
            .limit(limit)
        )
        if before_ms:
            query = query.where(match_players.c.ended_ms < before_ms)
        async with self.engine.connect() as conn:
            return [bytes(r.event) for r in (await conn.execute(query)).all()]

    async def archived(self, match_id: str) -> bytes | None:
        async with self.engine.connect() as conn:
            raw = await conn.scalar(select(matches.c.event).where(matches.c.match_id == match_id))
        return None if raw is None else bytes(raw)

    async def apply(self, event_id: str, at_ms: int, fx: Effects) -> bool:
        """Apply once; returns False for an event already applied."""
        touched: list[tuple[str, str, str]] = []
        rated: list[tuple[str, float]] = []
        async with self.engine.begin() as conn:
            result = await conn.execute(
                self._insert(processed)
                .values(event_id=event_id, at_ms=at_ms)
                .on_conflict_do_nothing()
            )
            if result.rowcount != 1:
                return False
            for d in fx.deltas:
                stmt = self._insert(scores).values(
                    board=d.board, key=d.key, player_id=d.player_id, value=d.value
                )
                stmt = stmt.on_conflict_do_update(
                    index_elements=["board", "key", "player_id"],
                    set_={"value": scores.c.value + stmt.excluded.value},
                )
                await conn.execute(stmt)
                touched.append((d.board, d.key, d.player_id))
            if fx.rated:
                rated = await self._rate(conn, *fx.rated)
        await self._sync(touched, rated)
        return True

    async def _rate(
        self, conn: AsyncConnection, winner: str, loser: str, length: int
    ) -> list[tuple[str, float]]:
        rows = {
            r.player_id: r
            for r in await conn.execute(
                select(ratings).where(ratings.c.player_id.in_([winner, loser])).with_for_update()
            )
        }

        def get(p: str) -> tuple[float, int, int]:
            r = rows.get(p)
            return (r.rating, r.experience, r.matches) if r else (boards.START_RATING, 0, 0)

        (wr, we, wm), (lr, le, lm) = get(winner), get(loser)
        change = boards.fibs_change(wr, lr, length, we, le)
        out = []
        for player, rating, exp, played in (
            (winner, wr + change.winner, we, wm),
            (loser, lr + change.loser, le, lm),
        ):
            stmt = self._insert(ratings).values(
                player_id=player, rating=rating, experience=exp + length, matches=played + 1
            )
            stmt = stmt.on_conflict_do_update(
                index_elements=["player_id"],
                set_={
                    "rating": stmt.excluded.rating,
                    "experience": stmt.excluded.experience,
                    "matches": stmt.excluded.matches,
                },
            )
            await conn.execute(stmt)
            out.append((player, rating))
        return out

    async def _sync(
        self, touched: list[tuple[str, str, str]], rated: list[tuple[str, float]]
    ) -> None:
        if not touched and not rated:
            return
        async with self.engine.connect() as conn:
            pipe = self.redis.pipeline(transaction=False)
            for board, key, player in touched:
                value = await conn.scalar(
                    select(scores.c.value).where(
                        scores.c.board == board, scores.c.key == key, scores.c.player_id == player
                    )
                )
                pipe.zadd(zkey(board, key), {player: int(value or 0)})
            for player, rating in rated:
                pipe.zadd(zkey("rating", ALL), {player: rating})
            await pipe.execute()

    async def resync(self) -> None:
        """Every sorted set from SQL (after a crash between commit and Redis, or a rebuild)."""
        keys = [k async for k in self.redis.scan_iter(match="lb:*")]
        if keys:
            await self.redis.delete(*keys)
        async with self.engine.connect() as conn:
            pipe = self.redis.pipeline(transaction=False)
            for r in await conn.execute(select(scores)):
                pipe.zadd(zkey(r.board, r.key), {r.player_id: r.value})
            for r in await conn.execute(select(ratings)):
                pipe.zadd(zkey("rating", ALL), {r.player_id: r.rating})
            await pipe.execute()

    async def reset(self) -> None:
        async with self.engine.begin() as conn:
            for table in (processed, scores, ratings):
                await conn.execute(delete(table))
        await self.resync()

    # -- reads -------------------------------------------------------------------------------

    async def top(self, board: str, key: str, limit: int) -> list[tuple[int, str, float]]:
        rows = await self.redis.zrevrange(zkey(board, key), 0, limit - 1, withscores=True)
        return [(i + 1, m.decode(), s) for i, (m, s) in enumerate(rows)]

    async def rank(
        self, board: str, key: str, player: str, around: int
    ) -> tuple[int, float, list[tuple[int, str, float]]]:
        """(rank, score, neighbours) with rank 0 when the player is not on the board."""
        index = await self.redis.zrevrank(zkey(board, key), player)
        if index is None:
            return 0, 0.0, []
        score = await self.redis.zscore(zkey(board, key), player)
        start = max(0, index - around)
        rows = await self.redis.zrevrange(zkey(board, key), start, index + around, withscores=True)
        return (
            index + 1,
            float(score),
            [(start + i + 1, m.decode(), s) for i, (m, s) in enumerate(rows)],
        )

    async def size(self, board: str, key: str) -> int:
        return int(await self.redis.zcard(zkey(board, key)))

    async def profile(self, player: str) -> dict[str, Any]:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(scores).where(scores.c.player_id == player))).all()
            rating = (
                await conn.execute(select(ratings).where(ratings.c.player_id == player))
            ).first()
        out: dict[str, Any] = {"trophies": {}, "league": {}, "scored": {}}
        for r in rows:
            out[r.board][r.key] = r.value
        out["rating"] = rating.rating if rating else boards.START_RATING
        out["experience"] = rating.experience if rating else 0
        out["rated_matches"] = rating.matches if rating else 0
        return out
