"""A wallet fake behind the table's WalletPort (unit tests of the table core): holds move
diamonds out of a balance; a capture spends them (a raise into the match's escrow)."""

from __future__ import annotations

from collections.abc import Sequence

from services.common.errors import ServiceError
from services.common.log_port import KEPT, Outgoing, Receipt, Unsent, Verdict
from services.contracts.event_records import table_events


class FakeWallet:
    def __init__(self, **balances: int) -> None:
        self.balances = dict(balances)
        self.escrow: dict[str, int] = {}  # match -> stake per player
        self.holds: dict[str, tuple[str, list[tuple[str, int]]]] = {}  # key -> (match, amounts)
        self.captured: list[str] = []
        self.calls: list[str] = []
        self.down = False  # True: every call fails as the wallet being unreachable

    def _check_up(self) -> None:
        if self.down:
            raise ServiceError("UPSTREAM_UNAVAILABLE", "UNAVAILABLE: wallet down")

    def _short(self, players: list[str]) -> ServiceError:
        err = ServiceError("INSUFFICIENT_FUNDS", "short")
        err.metadata = {"players": ",".join(players)}
        return err

    async def hold_raise(self, key: str, match_id: str, cube: int) -> None:
        self._check_up()
        self.calls.append(key)
        if key in self.holds:
            return
        stake = self.escrow.get(match_id, 0)
        players = [p for p in self.balances if p in ("alice", "bob")]
        short = [p for p in players if self.balances[p] < stake]
        if short:
            raise self._short(short)
        for p in players:
            self.balances[p] -= stake
        self.holds[key] = (match_id, [(p, stake) for p in players])

    async def hold_spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> None:
        self._check_up()
        self.calls.append(key)
        if key in self.holds:
            return
        if self.balances.get(player_id, 0) < amount:
            raise self._short([player_id])
        self.balances[player_id] -= amount
        self.holds[key] = (match_id, [(player_id, amount)])

    async def capture(self, hold_key: str) -> None:
        self._check_up()
        self.calls.append(f"capture:{hold_key}")
        if hold_key not in self.holds:
            raise ServiceError("UNKNOWN_HOLD", hold_key)
        if hold_key in self.captured:
            return
        self.captured.append(hold_key)
        match_id, amounts = self.holds[hold_key]
        if hold_key.startswith("raise:"):
            self.escrow[match_id] += amounts[0][1]


class FakePublisher:
    """The event log as the relay sees it (services/common/log_port.py), on production Kafka:
    every record acknowledged at once and KEPT."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []  # (key, one serialized event), in order

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        for r in records:  # a commit's record: its events, in order
            for event in table_events(r.value, list(r.headers)):
                self.sent.append((r.key.decode(), event.SerializeToString()))
        return [KEPT] * len(records)

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        return [Verdict.READ] * len(receipts)

    async def close(self) -> None:
        return None
