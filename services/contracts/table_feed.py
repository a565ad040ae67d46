"""The table's outbox as the gateways read it: key names and the stream reader.

The table service writes; the gateways read (ARCHITECTURE: "gateways read it to push events to
players"). What the two share lives here, nothing else:
- `t:{s<shard>}:<table>:ev`, a Redis stream whose entry ids are the event seqs (`<seq>-0`),
  each entry's field `e` a serialized `bg.events.v1.TableEvent`: the durable record, read to
  resume;
- `t:{s<shard>}:<table>:up`, a pub/sub channel on which each commit publishes a
  `bg.table.v1.TableUpdate` (its events and both seats' views): the live push.
  Pub/sub is at most once, so readers detect a gap by seq and fill it from the stream;
- `t:{s<shard>}:<table>:seat`, the gateways' own channel beside it: a Play stream that opens
  publishes `<player> <stream>` there, and every other Play stream of that player to the table
  (another tab or device, on any gateway) ends with SEAT_TAKEN (the newest takes the seat).
The `{s<shard>}` hash tag keeps a table's keys in one Redis Cluster slot with its shard's clock
and relay sets (services/contracts/shards.py).
"""

from __future__ import annotations

from typing import Any

from services.contracts.shards import shard_of, shard_tag


def table_key(table_id: str) -> str:
    return "t:" + shard_tag(shard_of(table_id)) + ":" + table_id


def stream_key(table_id: str) -> str:
    return table_key(table_id) + ":ev"


def update_channel(table_id: str) -> str:
    return table_key(table_id) + ":up"


def seat_channel(table_id: str) -> str:
    return table_key(table_id) + ":seat"


def chat_channel(table_id: str) -> str:
    return table_key(table_id) + ":chat"


def chat_key(table_id: str) -> str:
    """The table's chat messages (a stream; services/gateway/chat.py)."""
    return table_key(table_id) + ":chatlog"


def table_of_channel(channel: str) -> str:
    """The table id of an update, seat or chat channel name (table ids hold no `}` or `:`)."""
    return channel[channel.index("}:") + 2 : channel.rindex(":")]


def stream_entries(entries: list[Any]) -> list[tuple[int, bytes]]:
    """(seq, serialized TableEvent) pairs from raw XRANGE/XREAD entries."""
    return [(int(eid.split(b"-")[0]), fields[b"e"]) for eid, fields in entries]


async def read_events(
    redis: Any, table_id: str, after_seq: int, upto_seq: int | None = None, count: int = 1000
) -> list[tuple[int, bytes]]:
    """Serialized events with after_seq < seq <= upto_seq (all after, when None), in order."""
    out: list[tuple[int, bytes]] = []
    low = after_seq
    while True:
        high = "+" if upto_seq is None else f"{upto_seq}-0"
        entries = await redis.xrange(stream_key(table_id), min=f"({low}-0", max=high, count=count)
        out += stream_entries(entries)
        if len(entries) < count:
            return out
        low = out[-1][0]
