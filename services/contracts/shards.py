"""Tables spread over a fixed number of virtual shards.

A table's Redis keys carry its shard's hash tag (`{s<n>}`), as do the shard's clock and relay
sets, so each commit script touches one Redis Cluster slot, and the clock workers and relays of
the table replicas divide the shards between them (services/table/shard_leases.py).

The count is part of the data layout, like a schema: every process must agree on it and
changing it moves every table's keys. 1,024 spreads evenly over any Valkey Cluster a deployment
will have (each primary owns thousands of slots) and over tens of table replicas.
"""

from __future__ import annotations

import hashlib
import zlib

from services.common.connections import reply_text

VIRTUAL_SHARDS = 1024


def shard_of(table_id: str) -> int:
    """The table's shard: stable across processes, hosts and releases (CRC-32, not hash())."""
    return zlib.crc32(table_id.encode()) % VIRTUAL_SHARDS


def shard_tag(shard: int) -> str:
    return "{s" + str(shard) + "}"


def assign(members: list[str], shards: int = VIRTUAL_SHARDS) -> dict[str, list[int]]:
    """Rendezvous hashing: each shard goes to the member with the highest hash of (member,
    shard). Deterministic, so every process computes the same split from the same members."""
    owned: dict[str, list[int]] = {m: [] for m in members}
    if not members:
        return owned
    for shard in range(shards):
        best = max(
            members,
            key=lambda m: hashlib.blake2b(f"{m}/{shard}".encode(), digest_size=8).digest(),
        )
        owned[best].append(shard)
    return owned


def live_members(reply: list[bytes | str]) -> list[str]:
    """The member names of a `zrangebyscore(TABLE_REPLICAS, now, +inf)` reply (redis_keys),
    sorted: the input to `assign` every replica and gateway computes the same split from."""
    return sorted(reply_text(m) for m in reply)
