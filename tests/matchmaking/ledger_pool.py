"""The director's PoolPort on the real ledger (services/wallet/pools.py on SQLite), in process:
the tournaments' tests move real diamonds and check the books. `down` makes every call fail as
an unreachable wallet does; `calls` counts what the director asked, by operation; `latency_s`
is a wallet's round trip (races between two registrations need one)."""

from __future__ import annotations

import asyncio
from collections import Counter

from services.common.errors import ServiceError
from services.wallet.ledger import Ledger
from services.wallet.pools import Pools


class LedgerPool:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.pools = Pools(ledger)
        self.down = False
        self.latency_s = 0.0
        self.calls: Counter[str] = Counter()

    async def _reach(self, kind: str) -> None:
        self.calls[kind] += 1
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if self.down:
            raise ServiceError("UPSTREAM_UNAVAILABLE", "UNAVAILABLE: wallet down")

    async def hold_buyin(self, key: str, tournament_id: str, player_id: str, amount: int) -> None:
        await self._reach("hold_buyin")
        await self.pools.hold_buyin(key, tournament_id, player_id, amount)

    async def release(self, key: str, hold_key: str) -> None:
        await self._reach("release")
        await self.ledger.release(key, hold_key)

    async def start_pool(self, key: str, tournament_id: str, players: list[str]) -> tuple[int, int]:
        await self._reach("start_pool")
        out = await self.pools.start(key, tournament_id, players)
        return out.payout, out.fees

    async def pay_prizes(self, key: str, tournament_id: str, prizes: dict[str, int]) -> None:
        await self._reach("pay_prizes")
        await self.pools.pay(key, tournament_id, prizes)

    async def refund_pool(self, key: str, tournament_id: str) -> None:
        await self._reach("refund_pool")
        await self.pools.refund(key, tournament_id)
