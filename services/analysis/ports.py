"""The analysis service's port to its queue and results (`AnalysisRepository`) and the types it
speaks in. The service's is services/analysis/adapters/sql_analyses.py (SQLite or PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bg.analysis.v1 import analysis_pb2


@dataclass(frozen=True)
class Claimed:
    match_id: str
    event: bytes
    attempts: int  # including this one


@dataclass(frozen=True)
class Stored:
    match_id: str
    table_id: str
    state: str
    ended_ms: int
    queued_ms: int
    result: bytes | None
    event: bytes | None  # the end event, while queued
    analysed_ms: int = 0  # when it was analysed (or failed); 0 while queued


class AnalysisRepository(Protocol):
    async def enqueue(
        self, match_id: str, table_id: str, profile: str, ended_ms: int, event: bytes, now_ms: int
    ) -> bool:
        """Queue a finished match once; False when it was queued (or analysed) before."""
        ...

    async def claim(self, now_ms: int, lease_ms: int, by: str = "") -> Claimed | None: ...

    async def release(self, by: str) -> int: ...

    async def finish(
        self,
        found: analysis_pb2.MatchAnalysis,
        profile: str,
        trended: Sequence[str],
        now_ms: int,
    ) -> bool:
        """Store a match's analysis once, and the error rates of its `trended` players; False
        when it was stored already."""
        ...

    async def fail(self, failed: analysis_pb2.MatchAnalysis, now_ms: int) -> bool:
        """Store a match as failed (`failed` says why) once it is still queued."""
        ...

    async def get(self, match_id: str) -> Stored | None: ...

    async def ahead_of(self, queued_ms: int, match_id: str) -> int: ...

    async def backlog(self) -> tuple[int, int]: ...

    async def trend(self, player: str, limit: int) -> list[analysis_pb2.MatchError]: ...

    async def population(self, min_decisions: int) -> list[float]:
        """Every trended player's error rate (thousandths a decision, over all their matches)
        who has at least `min_decisions` judged decisions, lowest first."""
        ...
