"""Money that reconciles without trusting any one delivery path.

The table-events consumer settles a match when its `MatchEnded` arrives. If that event never
arrives (a broker that lost it, a consumer stuck, a table whose state was lost, a deal that died
half-way), the escrow would stay open forever. Every `interval_s` the reconciler takes each
escrow open longer than `bound_s`, asks the table service how the match stands, and settles
(ENDED), refunds (CLOSED, or UNKNOWN: the table service never had or no longer has the match,
I-10; but an escrow older than the table service's memory of finished matches is alerted, not
refunded), or leaves it (PLAYING). The keys are the consumer's
(services/contracts/money_keys.py), so whichever path comes first closes the escrow and the
other replays or is refused: exactly once. An escrow it can neither resolve nor confirm as
playing is counted as stuck: an alert.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from bg.table.v1 import table_pb2
from services.common.backoff import pause
from services.common.clock import now_ms as wall_now
from services.common.errors import ServiceError
from services.contracts import money_keys
from services.wallet.ledger import Ledger
from services.wallet.metrics import WalletMetrics
from services.wallet.ports import OutcomePort

log = logging.getLogger("bg.wallet.reconciler")
State = table_pb2.MatchOutcome.State


@dataclass
class Pass:
    """What one pass did, by action (settled, refunded, playing, closed_meanwhile, stuck)."""

    actions: dict[str, int] = field(default_factory=dict)
    oldest_open_s: float = 0.0

    def count(self, action: str) -> None:
        self.actions[action] = self.actions.get(action, 0) + 1


class Reconciler:
    def __init__(
        self,
        ledger: Ledger,
        outcomes: OutcomePort,
        metrics: WalletMetrics | None = None,
        bound_s: float = 600.0,
        interval_s: float = 30.0,
        batch: int = 200,  # escrows a pass looks at (open_escrows' most)
        forgotten_after_s: float = money_keys.FINISHED_TTL_S,
    ) -> None:
        self.ledger = ledger
        self.outcomes = outcomes
        self.metrics = metrics
        self.bound_s = bound_s
        self.interval_s = interval_s
        self.batch = batch
        # The table service forgets a finished match this long after its end: an older escrow
        # it calls unknown may have ended, so it is not refunded but alerted.
        self.forgotten_after_s = forgotten_after_s

    async def run_once(self, now_ms: int | None = None) -> Pass:
        now_ms = wall_now() if now_ms is None else now_ms
        rows = await self.ledger.open_escrows(int(self.bound_s * 1000), self.batch, now_ms)
        done = Pass(oldest_open_s=(now_ms - rows[0].created_ms) / 1000 if rows else 0.0)
        for row in rows:
            age_s = (now_ms - row.created_ms) / 1000
            done.count(await self._reconcile(row.match_id, age_s))
        if self.metrics:
            self.metrics.escrows_stuck.set(done.actions.get("stuck", 0))
            self.metrics.oldest_open_escrow.set(done.oldest_open_s)
            for action, n in done.actions.items():
                self.metrics.reconciled.labels(action).inc(n)
        return done

    async def _reconcile(self, match_id: str, age_s: float) -> str:
        table_id = money_keys.table_of_match(match_id)
        try:
            outcome = await self.outcomes.outcome(table_id, match_id)
        except ServiceError as err:
            log.warning(
                "cannot ask the table about an open escrow",
                extra={"match_id": match_id, "code": err.code},
            )
            return "stuck"
        boosts = list(outcome.applied_boosts)
        try:
            if outcome.state == State.STATE_ENDED:
                await self.ledger.settle(
                    money_keys.settle(match_id), match_id, outcome.winner_id, outcome.cube, boosts
                )
                action = "settled"
            elif outcome.state == State.STATE_UNKNOWN and age_s < money_keys.UNKNOWN_REFUND_AFTER_S:
                return "playing"  # maybe still being dealt: matchmaking drives it on or undoes it
            elif outcome.state == State.STATE_UNKNOWN and age_s > self.forgotten_after_s:
                log.error(
                    "an old escrow's match is unknown to the table service: not refunded",
                    extra={"match_id": match_id, "age_s": round(age_s)},
                )
                return "stuck"
            elif outcome.state in (State.STATE_CLOSED, State.STATE_UNKNOWN):
                await self.ledger.refund(money_keys.refund(match_id), match_id, boosts)
                action = "refunded"
            else:
                return "playing"
        except ServiceError as err:
            if err.code == "ESCROW_CLOSED":
                return "closed_meanwhile"  # the consumer (or another pass) got there first
            log.error("cannot close an open escrow", extra={"match_id": match_id, "code": err.code})
            return "stuck"
        log.warning(
            "escrow reconciled",
            extra={"match_id": match_id, "action": action, "state": State.Name(outcome.state)},
        )
        return action

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.run_once()
            except Exception as exc:  # the database is down: next pass
                log.warning("reconciler pass failed", extra={"error": repr(exc)[:300]})
            await pause(stop, self.interval_s)
