"""The boards' state (`BoardRepository`, services/leaderboard/ports.py), where SQL is the record
and Redis sorted sets the ranks. The unit tests run on an in-memory one
(tests/leaderboard/memory_boards.py), held to this one by the same tests.

Each event is one SQL transaction that first records its id (a repeated id changes nothing),
then adds its deltas. After the commit, the touched Redis members are set to the SQL values
(absolute, so repeating it is harmless); `resync` rebuilds every sorted set from SQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bg.events.v1 import events_pb2
from services.contracts.redis_keys import BOARDS, board_key
from services.contracts.topics import TABLE_EVENTS, TOURNAMENT_EVENTS, WALLET_EVENTS
from services.leaderboard import boards
from services.leaderboard.effects import ALL, Effects, outcome, wallet_players
from services.leaderboard.ports import COURSE_POINTS, Change, Profile, Ranked
from services.leaderboard.schema import (
    match_players,
    matches,
    processed,
    ratings,
    scores,
    standing_changes,
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
        profile, results = outcome(event)
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
            for player, won in results.items():
                await conn.execute(
                    self._insert(match_players)
                    .values(
                        player_id=player,
                        match_id=event.match_id,
                        ended_ms=event.at_ms,
                        profile=profile,
                        won=None if won is None else int(won),
                    )
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
                "tournament_id": event.tournament_id,
                "at_ms": event.at_ms,
                "event": event.SerializeToString(),
            },
            tournament_result_players,
            [
                {"player_id": p.player_id, "tournament_id": event.tournament_id, "rank": p.rank}
                for p in event.placings
            ],
        )

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
        rated: list[tuple[str, float, float]] = []
        async with self.engine.begin() as conn:
            result = await conn.execute(
                self._insert(processed)
                .values(event_id=event_id, at_ms=at_ms)
                .on_conflict_do_nothing()
            )
            if result.rowcount != 1:
                return False
            changed: list[tuple[str, str, str, float, float]] = []
            for d in fx.deltas:
                stmt = self._insert(scores).values(
                    board=d.board, key=d.key, player_id=d.player_id, value=d.value
                )
                stmt = stmt.on_conflict_do_update(
                    index_elements=["board", "key", "player_id"],
                    set_={"value": scores.c.value + stmt.excluded.value},
                )
                after = (await conn.execute(stmt.returning(scores.c.value))).scalar_one()
                changed.append((d.player_id, d.board, d.key, after - d.value, after))
                touched.append((d.board, d.key, d.player_id))
            if fx.rated:
                rated = await self._rate(conn, *fx.rated)
                changed += [(p, "rating", ALL, before, after) for p, before, after in rated]
            await self._keep_changes(conn, event_id, at_ms, fx.source, changed)
        await self._sync(touched, [(p, after) for p, _, after in rated])
        return True

    async def _keep_changes(
        self,
        conn: AsyncConnection,
        event_id: str,
        at_ms: int,
        source: str,
        changed: list[tuple[str, str, str, float, float]],
    ) -> None:
        """An event's changes, by the match it belongs to (in the event's own transaction)."""
        for player, board, key, before, after in changed:
            stmt = self._insert(standing_changes).values(
                event_id=event_id,
                player_id=player,
                board=board,
                key=key,
                source=source,
                at_ms=at_ms,
                value_before=before,
                value_after=after,
            )
            await conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["event_id", "player_id", "board", "key"],
                    set_={"value_after": stmt.excluded.value_after},
                )
            )

    async def _rate(
        self, conn: AsyncConnection, winner: str, loser: str, length: int
    ) -> list[tuple[str, float, float]]:
        """The match's rating changes: (player, before, after) for the winner and the loser."""
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
        for player, before, rating, exp, played in (
            (winner, wr, wr + change.winner, we, wm),
            (loser, lr, lr + change.loser, le, lm),
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
            out.append((player, before, rating))
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
            for table in (processed, scores, ratings, standing_changes):
                await conn.execute(delete(table))
        await self.resync()

    # -- reads -------------------------------------------------------------------------------

    async def top(self, board: str, key: str, limit: int, offset: int = 0) -> list[Ranked]:
        rows = await self.redis.zrevrange(
            zkey(board, key), offset, offset + limit - 1, withscores=True
        )
        return [(offset + i + 1, m.decode(), s) for i, (m, s) in enumerate(rows)]

    async def changes(self, source: str, player: str) -> list[Change]:
        c = standing_changes.c
        query = (
            select(c.board, c.key, c.value_before, c.value_after)
            .where(c.source == source, c.player_id == player)
            .order_by(c.at_ms, c.value_before, c.board, c.key)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [Change(r.board, r.key, r.value_before, r.value_after) for r in rows]

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
            c = standing_changes.c
            course = (
                await conn.execute(
                    select(c.source, c.at_ms, c.value_after)
                    .where(c.player_id == player, c.board == "rating")
                    .order_by(c.at_ms.desc())
                    .limit(COURSE_POINTS)
                )
            ).all()
            record = (
                await conn.execute(
                    select(match_players.c.profile, match_players.c.won, func.count())
                    .where(match_players.c.player_id == player, match_players.c.won.is_not(None))
                    .group_by(match_players.c.profile, match_players.c.won)
                )
            ).all()
        out = Profile()
        for r in rows:
            getattr(out, r.board)[r.key] = r.value
        if rating:
            out.rating, out.experience, out.rated_matches = (
                rating.rating,
                rating.experience,
                rating.matches,
            )
        out.rating_course = [(r.source, r.at_ms, r.value_after) for r in reversed(course)]
        for profile, won, count in record:
            wins, losses = out.record.get(profile or "", (0, 0))
            out.record[profile or ""] = (wins + count, losses) if won else (wins, losses + count)
        return out
