"""The analysis worker: takes the oldest queued match, judges it off the event loop (the
evaluator is CPU work: a daemon thread, so the gRPC API and the consumer keep answering and a
stop never waits for it), stores the result. Play never waits for it: the table service has
long since moved on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from bg.analysis.v1 import analysis_pb2
from services.analysis.judge import Facts, facts_of, fair_play_evidence, judge
from services.analysis.ports import AnalysisRepository

log = logging.getLogger("bg.analysis")
T = TypeVar("T")
IDLE_POLL_S = 2.0  # another replica's queued matches are found this often when nothing wakes us


def _now_ms() -> int:
    return int(time.time() * 1000)


async def off_loop(fn: Callable[[bytes], T], arg: bytes) -> T:
    """`fn(arg)` on a daemon thread of its own: the loop keeps serving meanwhile, and a stopping
    process does not wait for a match half judged (it stays queued; the next start takes it)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            outcome: tuple[T | None, BaseException | None] = (fn(arg), None)
        except BaseException as exc:  # handed to the awaiting coroutine
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="analysis-judge", daemon=True).start()
    return await done


class Worker:
    def __init__(
        self,
        store: AnalysisRepository,
        lease_s: float,
        attempts: int,
        metrics: Any = None,
        replica: str = "",
        judge_fn: Callable[[bytes], analysis_pb2.MatchAnalysis] = judge,
    ) -> None:
        self.store = store
        self.lease_ms = int(lease_s * 1000)
        self.attempts = attempts
        self.metrics = metrics
        self.judge = judge_fn
        self.replica = replica
        self.woken = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        freed = await self.store.release(self.replica)
        if freed:
            log.info(
                "matches this replica held before it stopped are free again",
                extra={"matches": freed},
            )
        while not stop.is_set():
            try:
                worked = await self.step()
            except Exception:
                log.exception("analysis step failed; trying again")
                worked = False
            if not worked:
                await self._idle(stop)

    async def _idle(self, stop: asyncio.Event) -> None:
        """Until a match is queued here, `stop`, or IDLE_POLL_S (another replica's queue)."""
        self.woken.clear()
        waits = [asyncio.ensure_future(e.wait()) for e in (self.woken, stop)]
        try:
            await asyncio.wait(waits, timeout=IDLE_POLL_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def step(self) -> bool:
        """Analyse one queued match; False when none was waiting."""
        claimed = await self.store.claim(_now_ms(), self.lease_ms, self.replica)
        if claimed is None:
            return False
        facts = facts_of(claimed.event)
        if claimed.attempts > self.attempts:
            await self._fail(facts, f"gave up after {self.attempts} attempts")
            return True
        started = time.monotonic()
        try:
            found = await off_loop(self.judge, claimed.event)
        except ValueError as exc:  # an illegal record: it will not get better
            log.error("match not analysable", extra={"match_id": claimed.match_id, "why": str(exc)})
            await self._fail(facts, str(exc))
            return True
        evidence = fair_play_evidence(found, facts.tested)
        stored = await self.store.finish(found, facts.profile, facts.trended, _now_ms(), evidence)
        self._count("done" if stored else "duplicate")
        if self.metrics is not None and stored:
            self.metrics.decisions.inc(len(found.decisions))
            self.metrics.seconds.observe(time.monotonic() - started)
        return True

    async def _fail(self, facts: Facts, why: str) -> None:
        """Stored as failed, with who played it (its players may still read why)."""
        failed = analysis_pb2.MatchAnalysis(
            match_id=facts.match_id,
            table_id=facts.table_id,
            player_ids=facts.player_ids,
            state=analysis_pb2.ANALYSIS_STATE_FAILED,
            ended_ms=facts.ended_ms,
            failure=why[:500],
        )
        await self.store.fail(failed, _now_ms())
        self._count("failed")

    async def gauge(self) -> None:
        """The queue's backlog and age, for the dashboard and the alerts."""
        if self.metrics is None:
            return
        count, oldest = await self.store.backlog()
        self.metrics.backlog.set(count)
        self.metrics.oldest_age.set(max(0.0, (_now_ms() - oldest) / 1000) if oldest else 0.0)

    def _count(self, result: str) -> None:
        if self.metrics is not None:
            self.metrics.matches.labels(result).inc()
