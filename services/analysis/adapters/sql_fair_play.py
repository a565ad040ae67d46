"""The fair-play test's records in SQL (services/analysis/fair_play.py; the tables in
services/analysis/schema.py): each player's evidence per match and the test's value after it,
taken in the transaction that stores the match's analysis (SqlAnalyses.finish), the flags it
raises and the operators' decisions on them."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bg.analysis.v1 import analysis_pb2
from services.analysis.fair_play import THRESHOLD, MatchEvidence, cusum, flagged
from services.analysis.schema import OPEN, fair_play_flags, fair_play_matches, fair_play_players
from services.common.errors import Conflict, NotFound

DECIDED = {"clear": "cleared", "restrict": "restricted", "ban": "banned"}


class SqlFairPlay:
    def __init__(self, engine: AsyncEngine, threshold: float = THRESHOLD) -> None:
        self.engine = engine
        self.threshold = threshold  # BG_FAIR_PLAY_THRESHOLD
        self._insert = sqlite.insert if engine.dialect.name == "sqlite" else postgresql.insert

    async def take(
        self,
        conn: AsyncConnection,
        player: str,
        found: analysis_pb2.MatchAnalysis,
        profile: str,
        evidence: MatchEvidence,
        now_ms: int,
    ) -> None:
        """The player's test moved on by one match, in the transaction `conn` that stores the
        match's analysis (so a match counts once), a flag raised when it reaches the threshold
        with none open. The player's row is locked (PostgreSQL; SQLite's writer is alone), so
        two replicas finishing two of their matches at once take them one after the other."""
        await conn.execute(
            self._insert(fair_play_players)
            .values(player_id=player, statistic=0.0, seq=0, run_seq=0, open_flag=0)
            .on_conflict_do_nothing()
        )
        row = (
            await conn.execute(
                select(fair_play_players)
                .where(fair_play_players.c.player_id == player)
                .with_for_update()
            )
        ).one()
        seq = row.seq + 1
        statistic = cusum(row.statistic, evidence)
        run_seq = 0 if statistic <= 0 else (row.run_seq or seq)
        fields = asdict(evidence)
        fields.pop("score")
        row_of_match = dict(
            player_id=player,
            match_id=found.match_id,
            ended_ms=found.ended_ms,
            profile=profile,
            score=evidence.score,
            statistic=statistic,
            seq=seq,
            **fields,
        )
        await conn.execute(insert(fair_play_matches).values(row_of_match))
        open_flag = row.open_flag
        if not open_flag and flagged(statistic, self.threshold):
            flag = dict(
                player_id=player,
                flagged_ms=now_ms,
                statistic=statistic,
                threshold=self.threshold,
                first_seq=run_seq or seq,
                last_seq=seq,
                state=OPEN,
                decided_by="",
                reason="",
                decided_ms=0,
            )
            raised = await conn.execute(insert(fair_play_flags).values(flag))
            open_flag = int(raised.inserted_primary_key[0])  # type: ignore[index]
        await conn.execute(
            update(fair_play_players)
            .where(fair_play_players.c.player_id == player)
            .values(statistic=statistic, seq=seq, run_seq=run_seq, open_flag=open_flag)
        )

    async def flags(
        self, state: str, limit: int, player: str = "", flag_id: int = 0
    ) -> list[analysis_pb2.FairPlayFlag]:
        query = select(fair_play_flags).order_by(fair_play_flags.c.flag_id).limit(limit)
        if flag_id:
            query = query.where(fair_play_flags.c.flag_id == flag_id)
        if state != "all":
            query = query.where(fair_play_flags.c.state == state)
        if player:
            query = query.where(fair_play_flags.c.player_id == player)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
            return [await self._flag(conn, row) for row in rows]

    async def evidence(self, player: str, limit: int) -> analysis_pb2.PlayerEvidenceResponse:
        async with self.engine.connect() as conn:
            state = (
                await conn.execute(
                    select(fair_play_players).where(fair_play_players.c.player_id == player)
                )
            ).first()
            rows = (
                await conn.execute(
                    select(fair_play_matches)
                    .where(fair_play_matches.c.player_id == player)
                    .order_by(fair_play_matches.c.seq.desc())
                    .limit(limit)
                )
            ).all()
        return analysis_pb2.PlayerEvidenceResponse(
            matches=[_match(m) for m in rows],
            statistic=state.statistic if state else 0.0,
            threshold=self.threshold,
            open_flag=state.open_flag if state else 0,
        )

    async def _flag(self, conn: AsyncConnection, row: Any) -> analysis_pb2.FairPlayFlag:
        """A flag with its evidence: the player's matches from its run's first; an open flag's
        up to their latest (the reviewer sees what came after it too)."""
        matches = select(fair_play_matches).where(
            fair_play_matches.c.player_id == row.player_id,
            fair_play_matches.c.seq >= row.first_seq,
        )
        if row.state != OPEN:
            matches = matches.where(fair_play_matches.c.seq <= row.last_seq)
        found = (await conn.execute(matches.order_by(fair_play_matches.c.seq))).all()
        return analysis_pb2.FairPlayFlag(
            flag_id=row.flag_id,
            player_id=row.player_id,
            flagged_ms=row.flagged_ms,
            statistic=row.statistic,
            threshold=row.threshold,
            state=row.state,
            decided_by=row.decided_by,
            reason=row.reason,
            decided_ms=row.decided_ms,
            matches=[_match(m) for m in found],
        )

    async def decide(
        self, flag_id: int, decision: str, operator: str, reason: str, now_ms: int
    ) -> analysis_pb2.FairPlayFlag:
        async with self.engine.begin() as conn:
            row = (
                await conn.execute(
                    select(fair_play_flags)
                    .where(fair_play_flags.c.flag_id == flag_id)
                    .with_for_update()
                )
            ).first()
            if row is None:
                raise NotFound("UNKNOWN_FLAG", f"no fair-play flag {flag_id}")
            if row.state != OPEN:
                raise Conflict("ALREADY_DECIDED", f"flag {flag_id} was {row.state} already")
            seq = await conn.scalar(
                select(fair_play_players.c.seq).where(
                    fair_play_players.c.player_id == row.player_id
                )
            )
            await conn.execute(
                update(fair_play_flags)
                .where(fair_play_flags.c.flag_id == flag_id)
                .values(
                    state=DECIDED[decision],
                    decided_by=operator,
                    reason=reason,
                    decided_ms=now_ms,
                    last_seq=int(seq or row.last_seq),
                )
            )
            # The evidence is spent: the test starts again from nothing, so the matches this
            # flag was raised on never raise another.
            await conn.execute(
                update(fair_play_players)
                .where(fair_play_players.c.player_id == row.player_id)
                .values(statistic=0.0, run_seq=0, open_flag=0)
            )
            decided = (
                await conn.execute(
                    select(fair_play_flags).where(fair_play_flags.c.flag_id == flag_id)
                )
            ).one()
            return await self._flag(conn, decided)


def _match(m: Any) -> analysis_pb2.FairPlayMatch:
    cube_rate = 1000 * m.cube_lost / m.cube_decisions if m.cube_decisions else 0.0
    return analysis_pb2.FairPlayMatch(
        match_id=m.match_id,
        ended_ms=m.ended_ms,
        profile=m.profile,
        decisions=m.decisions,
        close=m.close,
        close_best=m.close_best,
        clear=m.clear,
        clear_best=m.clear_best,
        checker_error_rate=1000 * m.checker_lost / m.decisions if m.decisions else 0.0,
        cube_decisions=m.cube_decisions,
        cube_error_rate=cube_rate,
        close_think_ms=m.close_think_ms,
        clear_think_ms=m.clear_think_ms,
        choice=m.choice,
        timing=m.timing,
        score=m.score,
        statistic=m.statistic,
    )
