"""The analysis service's ports to its queue and results (`AnalysisRepository`) and to the
fair-play test's flags (`FairPlayRepository`), and the types they speak in. The service's are
services/analysis/adapters/sql_analyses.py and sql_fair_play.py (SQLite or PostgreSQL)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bg.analysis.v1 import analysis_pb2
from services.analysis.fair_play import MatchEvidence


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
        fair_play: Mapping[str, MatchEvidence] | None = None,
    ) -> bool:
        """Store a match's analysis once, the error rates of its `trended` players and the
        fair-play evidence of its tested ones (their test moved on, a flag raised when it
        reaches the threshold and none is open); False when it was stored already."""
        ...

    async def add_luck(self, found: analysis_pb2.MatchAnalysis) -> bool:
        """Keep an analysis with its luck worked out, over the one still without it; False when
        another reader's was kept first."""
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


class FairPlayRepository(Protocol):
    """The fair-play test's flags and evidence (services/analysis/adapters/sql_fair_play.py;
    the test itself is taken with each match, in AnalysisRepository.finish)."""

    async def flags(
        self, state: str, limit: int, player: str = "", flag_id: int = 0
    ) -> list[analysis_pb2.FairPlayFlag]:
        """Flags in `state` ("all": any), oldest first, each with its matches; only `player`'s
        or the one `flag_id` when given."""
        ...

    async def evidence(self, player: str, limit: int) -> analysis_pb2.PlayerEvidenceResponse:
        """The player's fair-play evidence, newest first, and the test's value now."""
        ...

    async def decide(
        self, flag_id: int, decision: str, operator: str, reason: str, now_ms: int
    ) -> analysis_pb2.FairPlayFlag:
        """An open flag decided; its player's test starts again from 0 (UNKNOWN_FLAG,
        ALREADY_DECIDED)."""
        ...
