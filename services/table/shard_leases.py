"""Which virtual shards this table replica's clock worker and relay look after.

Each replica renews a membership lease (a score in `table:replicas`: its expiry) every
`ttl_ms / 4`; the live members divide the shards by rendezvous hashing, so when a replica
comes or goes only its share moves. A replica killed outright holds its shards until its lease
runs out (TTL_MS, BG_SHARD_LEASE_MS) and the others' next renewal sees it: that long, at worst
(1.25x the TTL), its shards' deadlines wait, unless it comes back first
under the same name (a supervised restart, a StatefulSet pod) and takes them up again. A replica
that stops cleanly hands them over at once.

Ownership is about work, not correctness: while two replicas briefly disagree (one has not yet
seen the other), both look at a shard, and the commit's compare-and-set still lets one deadline
fire once and the per-table relay lock keeps each table's events in order.

With each renewal a replica writes its gRPC `address`, so the gateways send a table's commands
to its shard's owner (services/gateway/table_owners.py): the replica whose cached state and
clocks the table already has. A command that reaches another replica is still applied once
(the commit's seq check), only with a read of the table first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from typing import Any

from services.common.backoff import pause
from services.common.clock import now_ms
from services.contracts.redis_keys import TABLE_REPLICA_ADDRESSES as ADDRESSES
from services.contracts.redis_keys import TABLE_REPLICAS as MEMBERS
from services.contracts.shards import VIRTUAL_SHARDS, assign, live_members

log = logging.getLogger("bg.table.shards")
TTL_MS = 750  # a failover's deadlines wait at most 1.25x this (issue 43: < 1 s)
__all__ = ["MEMBERS", "AllShards", "ShardLeases", "assign"]


class ShardLeases:
    def __init__(
        self,
        redis: Any,
        name: str = "",
        ttl_ms: int = TTL_MS,
        now: Callable[[], int] = now_ms,
        on_change: Callable[[list[int]], None] | None = None,
    ) -> None:
        self.redis = redis
        # A stable name (the replica's) keeps a restarted replica on its own shards.
        self.member = name or f"table-{secrets.token_hex(4)}"
        self.address = ""  # host:port the gateways reach this replica at, once it serves
        self.ttl_ms = ttl_ms
        self.now = now
        self.on_change = on_change
        self.members: list[str] = []
        self._owned: list[int] = []
        self._owned_set: set[int] = set()

    def owned(self) -> list[int]:
        return self._owned

    def owns(self, shard: int) -> bool:
        return shard in self._owned_set

    async def renew(self) -> list[int]:
        """Renew this replica's lease and recompute its shards from the live members (one
        pipelined round trip)."""
        now = self.now()
        pipe = self.redis.pipeline(transaction=False)
        pipe.zadd(MEMBERS, {self.member: now + self.ttl_ms})
        if self.address:
            pipe.hset(ADDRESSES, self.member, self.address)
        pipe.zremrangebyscore(MEMBERS, "-inf", now)
        pipe.zrangebyscore(MEMBERS, now, "+inf")
        *_, live = await pipe.execute()
        members = live_members(live)
        if members != self.members:
            self.members = members
            self._owned = assign(members).get(self.member, [])
            self._owned_set = set(self._owned)
            log.info(
                "shards rebalanced",
                extra={"replicas": len(members), "owned": len(self._owned)},
            )
            if self.on_change:
                self.on_change(self._owned)
        return self._owned

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.renew()
            except Exception as exc:  # Redis away: keep the shards we had, try again
                log.warning("shard lease renewal failed", extra={"error": repr(exc)[:200]})
            await pause(stop, self.ttl_ms / 4000)
        with contextlib.suppress(Exception):
            await self.redis.zrem(MEMBERS, self.member)  # hand the shards over at once
            await self.redis.hdel(ADDRESSES, self.member)


class AllShards:
    """One replica looks after every shard (tests, tools, a single-replica deployment)."""

    def owned(self) -> list[int]:
        return list(range(VIRTUAL_SHARDS))

    def owns(self, shard: int) -> bool:
        return 0 <= shard < VIRTUAL_SHARDS
