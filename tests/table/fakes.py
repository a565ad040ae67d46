"""A wallet fake behind the table's WalletPort (unit tests of the table core)."""

from __future__ import annotations

from services.common.errors import ServiceError


class FakeWallet:
    def __init__(self, **balances: int) -> None:
        self.balances = dict(balances)
        self.escrow: dict[str, int] = {}  # match -> stake per player
        self.keys: set[str] = set()
        self.calls: list[str] = []

    async def balance(self, player_id: str) -> int:
        return self.balances.get(player_id, 0)

    async def spend(
        self, key: str, player_id: str, amount: int, reason: str, match_id: str
    ) -> None:
        self.calls.append(key)
        if key in self.keys:
            return
        if self.balances.get(player_id, 0) < amount:
            err = ServiceError("INSUFFICIENT_FUNDS", "short")
            err.metadata = {"players": player_id}
            raise err
        self.balances[player_id] -= amount
        self.keys.add(key)

    async def raise_escrow(self, key: str, match_id: str) -> None:
        self.calls.append(key)
        if key not in self.keys:
            self.keys.add(key)
            self.escrow[match_id] = self.escrow.get(match_id, 0) * 2
