"""Which table replica owns each table, as the replicas' shard leases say.

Each table replica renews a lease and writes its gRPC address beside it
(services/table/shard_leases.py); the live members divide the shards by rendezvous hashing
(services/contracts/shards.py `assign`). A gateway reads the same two keys every `refresh_s` and
computes the same split, so it sends a table's commands to the replica that owns the table's
shard: the one holding its state in memory and running its clocks. Between a lease moving and
the next read a command may reach the former owner; it is still applied exactly once (the
commit's seq check and the command id), only with a read of the table first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from services.common.backoff import pause
from services.common.clock import now_ms
from services.common.connections import reply_text
from services.contracts.redis_keys import TABLE_REPLICA_ADDRESSES as ADDRESSES
from services.contracts.redis_keys import TABLE_REPLICAS as MEMBERS
from services.contracts.shards import VIRTUAL_SHARDS, assign, live_members, shard_of

log = logging.getLogger("bg.gateway.owners")
REFRESH_S = 0.5


class TableOwners:
    def __init__(
        self, redis: Any, refresh_s: float = REFRESH_S, now: Callable[[], int] = now_ms
    ) -> None:
        self.redis = redis
        self.refresh_s = refresh_s
        self.now = now
        self.members: list[str] = []
        self._addresses: dict[str, str] = {}
        self._by_shard: list[str] = [""] * VIRTUAL_SHARDS  # the owner's address, "" unknown

    def address(self, table_id: str) -> str:
        """The owner's gRPC address ("" while no live replica has said where it is)."""
        return self._by_shard[shard_of(table_id)]

    def others(self, address: str) -> list[str]:
        """The other live replicas' addresses, where a table's call goes when its owner does
        not answer."""
        found = (self._addresses.get(m, "") for m in self.members)
        return [a for a in found if a and a != address]

    async def refresh(self) -> None:
        """Read the live members and their addresses (one pipelined round trip)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrangebyscore(MEMBERS, self.now(), "+inf")
        pipe.hgetall(ADDRESSES)
        live, addresses = await pipe.execute()
        members = live_members(live)
        known = {reply_text(k): reply_text(v) for k, v in addresses.items()}
        if members == self.members and known == self._addresses:
            return
        by_shard = [""] * VIRTUAL_SHARDS
        for member, shards in assign(members).items():
            for shard in shards:
                by_shard[shard] = known.get(member, "")
        self.members, self._addresses, self._by_shard = members, known, by_shard
        log.info("table owners changed", extra={"replicas": len(members)})

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.refresh()
            except Exception as exc:  # Redis away: keep the map we had (commands still apply)
                log.warning("table owners not read", extra={"error": repr(exc)[:200]})
            await pause(stop, self.refresh_s)
