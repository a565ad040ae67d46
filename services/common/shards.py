"""Tables spread over a fixed number of virtual shards.

A table's Redis keys carry its shard's hash tag (`{s<n>}`), as do the shard's clock and relay
sets, so each commit script touches one Redis Cluster slot, and the clock workers and relays of
the table replicas divide the shards between them (services/table/shard_leases.py).

The count is part of the data layout, like a schema: every process must agree on it and
changing it moves every table's keys. 1,024 spreads evenly over any Valkey Cluster a deployment
will have (each primary owns thousands of slots) and over tens of table replicas.
"""

from __future__ import annotations

import zlib

VIRTUAL_SHARDS = 1024


def shard_of(table_id: str) -> int:
    """The table's shard: stable across processes, hosts and releases (CRC-32, not hash())."""
    return zlib.crc32(table_id.encode()) % VIRTUAL_SHARDS


def shard_tag(shard: int) -> str:
    return "{s" + str(shard) + "}"


def clocks_key(shard: int) -> str:
    """The shard's deadlines: table id -> deadline ms."""
    return "clocks:" + shard_tag(shard)


def relay_key(shard: int) -> str:
    """The shard's tables with events not yet on Kafka: table id -> ms of the oldest."""
    return "relay:" + shard_tag(shard)
