"""The analysis queue and its results in SQL (SQLite or PostgreSQL, as the other services).

A match is one row, keyed by its id: enqueuing it again changes nothing. A worker claims the
oldest queued row for a lease with a compare-and-set on the lease it read, so two replicas
never work on one match at a time; the result and the players' rows land in one transaction
that only a still-queued row accepts, so a match is stored once even when a lease ran out under
a slow worker. A worker killed -9 mid-match leaves the row queued: when its lease ends the match
is taken again, neither lost nor stored twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from bg.analysis.v1 import analysis_pb2
from services.analysis.adapters.sql_fair_play import SqlFairPlay
from services.analysis.fair_play import MatchEvidence
from services.analysis.ports import Claimed, Stored
from services.analysis.schema import DONE, FAILED, QUEUED, analyses, player_errors


class SqlAnalyses:
    def __init__(self, engine: AsyncEngine, fair_play: SqlFairPlay | None = None) -> None:
        self.engine = engine
        self.fair_play = fair_play or SqlFairPlay(engine)  # the test, taken with each match
        self._insert = sqlite.insert if engine.dialect.name == "sqlite" else postgresql.insert

    async def enqueue(
        self, match_id: str, table_id: str, profile: str, ended_ms: int, event: bytes, now_ms: int
    ) -> bool:
        """Queue a finished match once; False when it was queued (or analysed) before."""
        async with self.engine.begin() as conn:
            result = await conn.execute(
                self._insert(analyses)
                .values(
                    match_id=match_id,
                    table_id=table_id,
                    profile=profile,
                    ended_ms=ended_ms,
                    queued_ms=now_ms,
                    state=QUEUED,
                    claimed_until_ms=0,
                    claimed_by="",
                    attempts=0,
                    event=event,
                    analysed_ms=0,
                    result=None,
                )
                .on_conflict_do_nothing()
            )
        return bool(result.rowcount == 1)

    async def claim(self, now_ms: int, lease_ms: int, by: str = "") -> Claimed | None:
        """The oldest queued match no live lease holds, leased to `by` until now+lease."""
        for _ in range(8):  # another replica won the row: take the next
            async with self.engine.begin() as conn:
                row = (
                    await conn.execute(
                        select(
                            analyses.c.match_id,
                            analyses.c.event,
                            analyses.c.attempts,
                            analyses.c.claimed_until_ms,
                        )
                        .where(analyses.c.state == QUEUED, analyses.c.claimed_until_ms < now_ms)
                        .order_by(analyses.c.queued_ms, analyses.c.match_id)
                        .limit(1)
                    )
                ).first()
                if row is None:
                    return None
                won = await conn.execute(
                    update(analyses)
                    .where(
                        analyses.c.match_id == row.match_id,
                        analyses.c.state == QUEUED,
                        analyses.c.claimed_until_ms == row.claimed_until_ms,
                    )
                    .values(
                        claimed_until_ms=now_ms + lease_ms,
                        claimed_by=by,
                        attempts=row.attempts + 1,
                    )
                )
            if won.rowcount == 1:
                return Claimed(row.match_id, bytes(row.event or b""), row.attempts + 1)
        return None

    async def release(self, by: str) -> int:
        """Let go of every lease `by` holds: a replica started again after a kill -9 knows the
        match it was on is nobody's now, so it need not wait for the lease to run out."""
        if not by:
            return 0
        async with self.engine.begin() as conn:
            result = await conn.execute(
                update(analyses)
                .where(analyses.c.state == QUEUED, analyses.c.claimed_by == by)
                .values(claimed_until_ms=0, claimed_by="")
            )
        return int(result.rowcount or 0)

    async def finish(
        self,
        found: analysis_pb2.MatchAnalysis,
        profile: str,
        trended: Sequence[str],
        now_ms: int,
        fair_play: Mapping[str, MatchEvidence] | None = None,
    ) -> bool:
        """Store a match's analysis, the error rates of its `trended` players and the fair-play
        evidence of its tested ones; False when it was stored already (by a worker whose lease
        this one outlived): the test takes a match once."""
        async with self.engine.begin() as conn:
            done = await conn.execute(
                update(analyses)
                .where(analyses.c.match_id == found.match_id, analyses.c.state == QUEUED)
                .values(
                    state=DONE,
                    result=found.SerializeToString(),
                    event=None,
                    analysed_ms=now_ms,
                    claimed_until_ms=0,
                )
            )
            if done.rowcount != 1:
                return False
            for p in found.players:
                if p.player_id not in trended or not p.decisions:
                    continue
                await conn.execute(
                    self._insert(player_errors)
                    .values(
                        player_id=p.player_id,
                        match_id=found.match_id,
                        ended_ms=found.ended_ms,
                        profile=profile,
                        decisions=p.decisions,
                        lost=p.error_rate * p.decisions / 1000,
                    )
                    .on_conflict_do_nothing()
                )
            for player, evidence in (fair_play or {}).items():
                await self.fair_play.take(conn, player, found, profile, evidence, now_ms)
        return True

    async def add_luck(self, found: analysis_pb2.MatchAnalysis) -> bool:
        """The analysis with its luck over the stored one, once: two readers' are the same."""
        async with self.engine.begin() as conn:
            row = (
                await conn.execute(
                    select(analyses.c.result)
                    .where(analyses.c.match_id == found.match_id, analyses.c.state == DONE)
                    .with_for_update()
                )
            ).first()
            if row is None or row.result is None:
                return False
            if not analysis_pb2.MatchAnalysis.FromString(bytes(row.result)).luck_pending:
                return False
            await conn.execute(
                update(analyses)
                .where(analyses.c.match_id == found.match_id)
                .values(result=found.SerializeToString())
            )
        return True

    async def fail(self, failed: analysis_pb2.MatchAnalysis, now_ms: int) -> bool:
        """A record that cannot be analysed: kept as failed (with why), never retried."""
        async with self.engine.begin() as conn:
            result = await conn.execute(
                update(analyses)
                .where(analyses.c.match_id == failed.match_id, analyses.c.state == QUEUED)
                .values(
                    state=FAILED,
                    result=failed.SerializeToString(),
                    event=None,
                    analysed_ms=now_ms,
                    claimed_until_ms=0,
                )
            )
        return bool(result.rowcount == 1)

    async def get(self, match_id: str) -> Stored | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(
                        analyses.c.match_id,
                        analyses.c.table_id,
                        analyses.c.state,
                        analyses.c.ended_ms,
                        analyses.c.queued_ms,
                        analyses.c.result,
                        analyses.c.event,
                        analyses.c.analysed_ms,
                    ).where(analyses.c.match_id == match_id)
                )
            ).first()
        if row is None:
            return None
        result = None if row.result is None else bytes(row.result)
        event = None if row.event is None else bytes(row.event)
        return Stored(
            row.match_id,
            row.table_id,
            row.state,
            row.ended_ms,
            row.queued_ms,
            result,
            event,
            row.analysed_ms,
        )

    async def ahead_of(self, queued_ms: int, match_id: str) -> int:
        """Queued matches before this one."""
        async with self.engine.connect() as conn:
            found = await conn.scalar(
                select(func.count()).where(
                    analyses.c.state == QUEUED,
                    (analyses.c.queued_ms < queued_ms)
                    | ((analyses.c.queued_ms == queued_ms) & (analyses.c.match_id < match_id)),
                )
            )
        return int(found or 0)

    async def backlog(self) -> tuple[int, int]:
        """(matches queued, the oldest one's queued_ms or 0)."""
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    select(func.count(), func.min(analyses.c.queued_ms)).where(
                        analyses.c.state == QUEUED
                    )
                )
            ).one()
        return int(row[0] or 0), int(row[1] or 0)

    async def population(self, min_decisions: int) -> list[float]:
        decisions = func.sum(player_errors.c.decisions)
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(func.sum(player_errors.c.lost), decisions)
                    .group_by(player_errors.c.player_id)
                    .having(decisions >= min_decisions)
                )
            ).all()
        return sorted(1000 * float(lost) / int(n) for lost, n in rows)

    async def trend(self, player: str, limit: int) -> list[analysis_pb2.MatchError]:
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(player_errors)
                    .where(player_errors.c.player_id == player)
                    .order_by(player_errors.c.ended_ms.desc())
                    .limit(limit)
                )
            ).all()
        return [
            analysis_pb2.MatchError(
                match_id=r.match_id,
                ended_ms=r.ended_ms,
                decisions=r.decisions,
                error_rate=1000 * r.lost / r.decisions if r.decisions else 0.0,
                profile=r.profile,
            )
            for r in rows
        ]
