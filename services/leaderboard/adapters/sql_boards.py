"""The boards' state (`BoardRepository`, services/leaderboard/ports.py), where SQL is the record
and Redis sorted sets the ranks. The unit tests run on an in-memory one
(tests/leaderboard/memory_boards.py), held to this one by the same tests.

Each event is one SQL transaction that first records its id (a repeated id changes nothing),
then adds its deltas. After the commit, the touched Redis members are set to the SQL values
(absolute, so repeating it is harmless); `resync` rebuilds every sorted set from SQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bg.events.v1 import events_pb2
from services.contracts.redis_keys import BOARDS, board_key
from services.contracts.topics import TABLE_EVENTS, TOURNAMENT_EVENTS, WALLET_EVENTS
from services.leaderboard import boards
from services.leaderboard.effects import ALL, Effects, wallet_players
from services.leaderboard.ports import Profile, Ranked
from services.leaderboard.schema import (
    match_players,
    matches,
    processed,
    ratings,
    scores,
    tournament_result_players,
    tournament_results,
    wallet_event_players,
    wallet_events,
)


def zkey(board: str, key: str) -> str:
    return board_key(board, key)


class SqlBoardStore:
    """The record in SQL, the ranks in Redis sorted sets derived from it."""

    def __init__(self, engine: AsyncEngine, redis: Any) -> None:  # redis-py: untyped
        self.engine = engine
        self.redis = redis
        self._insert = sqlite.insert if engine.dialect.name == "sqlite" else postgresql.insert

    async def archive(self, event: events_pb2.TableEvent) -> bool:
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

    async def archive_wallet(self, event: events_pb2.WalletEvent) -> bool:
        return await self._archive_once(
            wallet_events,
            {"event_id": event.event_id, "at_ms": event.at_ms, "event": event.SerializeToString()},
            wallet_event_players,
            [{"player_id": p, "event_id": event.event_id} for p in wallet_players(event)],
        )

    async def archive_tournament(self, event: events_pb2.TournamentEvent) -> bool:
        return await self._archive_once(
            tournament_results,
            {
                "tournament_id": event.tournament_id, "at_ms": event.at_ms,
                "event": event.SerializeToString(),
            },
            tournament_result_players,
            [
                {"player_id": p.player_id, "tournament_id": event.tournament_id, "rank": p.rank}
                for p in event.placings
            ],
        )  # fmt: skip

    async def _archive_once(
        self, record: Any, row: dict[str, Any], players: Any, rows: list[dict[str, Any]]
    ) -> bool:
        """One archived event and its players' rows, in one transaction; False (nothing written)
        for an event archived already."""
        async with self.engine.begin() as conn:
            result = await conn.execute(self._insert(record).values(**row).on_conflict_do_nothing())
            if result.rowcount != 1:
                return False
            for each in rows:
                await conn.execute(self._insert(players).values(**each).on_conflict_do_nothing())
        return True

    async def archived_events(self, player: str | None = None) -> list[tuple[str, bytes]]:
        games = select(matches.c.ended_ms.label("at"), matches.c.event)
        money = select(wallet_events.c.at_ms.label("at"), wallet_events.c.event)
        results = select(tournament_results.c.at_ms.label("at"), tournament_results.c.event)
        if player is not None:
            games = games.join(match_players, match_players.c.match_id == matches.c.match_id).where(
                match_players.c.player_id == player
            )
            money = money.join(
                wallet_event_players, wallet_event_players.c.event_id == wallet_events.c.event_id
            ).where(wallet_event_players.c.player_id == player)
            results = results.join(
                tournament_result_players,
                tournament_result_players.c.tournament_id == tournament_results.c.tournament_id,
            ).where(tournament_result_players.c.player_id == player)
        async with self.engine.connect() as conn:
            found = [(r.at, TABLE_EVENTS, bytes(r.event)) for r in await conn.execute(games)]
            found += [(r.at, WALLET_EVENTS, bytes(r.event)) for r in await conn.execute(money)]
            found += [
                (r.at, TOURNAMENT_EVENTS, bytes(r.event)) for r in await conn.execute(results)
            ]
        return [(topic, raw) for _, topic, raw in sorted(found, key=lambda f: f[0])]

    async def apply(self, event_id: str, at_ms: int, fx: Effects) -> bool:
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
        keys = [k async for k in self.redis.scan_iter(match=BOARDS)]
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

    async def top(self, board: str, key: str, limit: int) -> list[Ranked]:
        rows = await self.redis.zrevrange(zkey(board, key), 0, limit - 1, withscores=True)
        return [(i + 1, m.decode(), s) for i, (m, s) in enumerate(rows)]

    async def rank(
        self, board: str, key: str, player: str, around: int
    ) -> tuple[int, float, list[Ranked]]:
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

    async def profile(self, player: str) -> Profile:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(scores).where(scores.c.player_id == player))).all()
            rating = (
                await conn.execute(select(ratings).where(ratings.c.player_id == player))
            ).first()
        out = Profile()
        for r in rows:
            getattr(out, r.board)[r.key] = r.value
        if rating:
            out.rating, out.experience, out.rated_matches = (
                rating.rating, rating.experience, rating.matches
            )  # fmt: skip
        return out
