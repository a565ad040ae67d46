"""The reconciler (issue 13): every escrow open past the bound is settled, refunded or left
playing according to its table, exactly once, whatever the consumer did; an escrow it cannot
resolve is counted as stuck. Real ledger on SQLite and PostgreSQL; the table port is a fake."""

from __future__ import annotations

import time

import pytest

from bg.table.v1 import table_pb2
from services.common.errors import ServiceError
from services.common.metrics import ServiceMetrics
from services.contracts import money_keys
from services.wallet.consumer import TableEventsHandler
from services.wallet.ledger import Ledger
from services.wallet.metrics import WalletMetrics
from services.wallet.reconciler import Reconciler
from tests.wallet.conftest import fund

pytestmark = pytest.mark.integration
State = table_pb2.MatchOutcome.State


def later() -> int:
    """20 minutes from now: every escrow opened so far is past the bound. (Read when a test
    runs, not when the module is collected: the suite takes longer than the bound.)"""
    return int(time.time() * 1000) + 1_200_000


class FakeOutcomes:
    def __init__(self) -> None:
        self.outcomes: dict[str, table_pb2.MatchOutcome] = {}
        self.asked: list[tuple[str, str]] = []

    async def outcome(self, table_id: str, match_id: str) -> table_pb2.MatchOutcome:
        self.asked.append((table_id, match_id))
        if match_id not in self.outcomes:
            raise ServiceError("UPSTREAM_UNAVAILABLE", "UNAVAILABLE: no table replica")
        return self.outcomes[match_id]


async def test_open_escrows_are_closed_by_their_tables_outcome_exactly_once(
    ledger: Ledger,
) -> None:
    await fund(ledger, ann=5000, bob=5000)
    for m in ("ta-1", "tb-1", "tc-1", "td-1", "te-1"):
        await ledger.escrow(f"escrow:{m}", m, ["ann", "bob"], 500)
    boost = money_keys.boost_hold("ta-1", 1, 0, 1)
    await ledger.hold_spend(boost, "ann", 10, "boost", "ta-1")  # applied; its capture was lost
    await ledger.hold_raise(money_keys.raise_hold("ta-1", 1, 2), "ta-1", 2)  # taken, not captured
    fake = FakeOutcomes()
    fake.outcomes = {
        "ta-1": table_pb2.MatchOutcome(
            state=State.STATE_ENDED, winner_id="bob", cube=2, applied_boosts=[boost]
        ),
        "tb-1": table_pb2.MatchOutcome(state=State.STATE_CLOSED),
        "tc-1": table_pb2.MatchOutcome(state=State.STATE_UNKNOWN),  # the table lost it
        "td-1": table_pb2.MatchOutcome(state=State.STATE_PLAYING),
        # te-1: the table service cannot be reached
    }
    metrics = WalletMetrics(ServiceMetrics("wallet-test"))
    reconciler = Reconciler(ledger, fake, metrics, bound_s=600)
    assert (await reconciler.run_once(int(time.time() * 1000))).actions == {}  # none too old
    done = await reconciler.run_once(later())
    assert done.actions == {"settled": 1, "refunded": 2, "playing": 1, "stuck": 1}
    assert ("ta", "ta-1") in fake.asked  # table id from the match id
    # ta-1: pot 2,000 after the raise, fees 160; the boost stays with the house.
    # tb-1, tc-1 refunded; td-1 and te-1 still hold 500 each.
    assert await ledger.balance("bob") == 5000 - 1000 - 500 - 500 + 1840
    assert await ledger.balance("ann") == 5000 - 1000 - 10 - 500 - 500
    assert metrics.escrows_stuck._value.get() == 1

    again = await reconciler.run_once(later())
    assert again.actions == {"playing": 1, "stuck": 1}  # closed ones are not looked at again
    # The consumer's MatchEnded arriving late: skipped, not paid twice.
    handler = TableEventsHandler(ledger)
    late = await handler.handle(_match_ended("ta-1", ["ann", "bob"], winner=1))
    assert late == "replayed"  # the same key: the first answer, no second payout
    assert await ledger.balance("bob") == 5000 - 2000 + 1840


async def test_a_refund_racing_the_consumer_settles_once(ledger: Ledger) -> None:
    """The consumer settles between the reconciler's question and its answer: the reconciler's
    refund is refused (ESCROW_CLOSED) and counted as closed meanwhile."""
    await fund(ledger, ann=1000, bob=1000)
    await ledger.escrow("escrow:tz-1", "tz-1", ["ann", "bob"], 100)

    class Racing(FakeOutcomes):
        async def outcome(self, table_id: str, match_id: str) -> table_pb2.MatchOutcome:
            await ledger.settle(money_keys.settle(match_id), match_id, "ann")
            return table_pb2.MatchOutcome(state=State.STATE_CLOSED)

    done = await Reconciler(ledger, Racing(), bound_s=600).run_once(later())
    assert done.actions == {"closed_meanwhile": 1}
    assert await ledger.balance("ann") == 900 + 184 and await ledger.balance("bob") == 900


def _match_ended(match_id: str, players: list[str], winner: int) -> bytes:
    from bg.events.v1 import events_pb2

    ev = events_pb2.TableEvent(event_id=f"{match_id}:99", table_id="t", seq=99, match_id=match_id)
    ev.match_ended.info.profile = "wagered"
    ev.match_ended.info.player_ids.extend(players)
    ev.match_ended.winner_seat = winner
    return ev.SerializeToString()


async def test_an_old_escrow_unknown_to_the_tables_is_alerted_not_refunded(ledger: Ledger) -> None:
    """The table service forgets finished matches after its grace period: an escrow older than
    that which it calls unknown may well have ended, so no refund: stuck, for an operator."""
    await fund(ledger, ann=1000, bob=1000)
    await ledger.escrow("escrow:tq-1", "tq-1", ["ann", "bob"], 100)
    fake = FakeOutcomes()
    fake.outcomes["tq-1"] = table_pb2.MatchOutcome(state=State.STATE_UNKNOWN)
    reconciler = Reconciler(ledger, fake, bound_s=600, forgotten_after_s=3600)
    two_hours = int(time.time() * 1000) + 7_200_000
    assert (await reconciler.run_once(two_hours)).actions == {"stuck": 1}
    assert await ledger.balance("ann") == 900


async def test_an_escrow_still_within_the_deal_window_is_not_refunded(ledger: Ledger) -> None:
    """The table service does not know a match that is still being dealt: the reconciler waits
    until matchmaking's deal window is well past, or a refund could race the match's creation."""
    await fund(ledger, ann=1000, bob=1000)
    await ledger.escrow("escrow:tw-1", "tw-1", ["ann", "bob"], 100)
    fake = FakeOutcomes()
    fake.outcomes["tw-1"] = table_pb2.MatchOutcome(state=State.STATE_UNKNOWN)
    reconciler = Reconciler(ledger, fake, bound_s=10)
    soon = int(time.time() * 1000) + 60_000  # past the bound, within the deal window x 4
    assert (await reconciler.run_once(soon)).actions == {"playing": 1}
    assert await ledger.balance("ann") == 900
    later = int(time.time() * 1000) + 600_000
    assert (await reconciler.run_once(later)).actions == {"refunded": 1}
    assert await ledger.balance("ann") == 1000
