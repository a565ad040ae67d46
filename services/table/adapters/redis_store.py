"""Table state in Redis: one hash per table, its event stream, and its shard's clock set.

Every change goes through one Lua script that checks the table's `seq`, writes the new state,
appends the events to the table's stream (stream ids are the event seqs), sets or clears the
table's deadline in its shard's clock set, remembers the command id (scoped to its seat, I-34),
marks the table for the Kafka relay, and publishes the commit's `TableUpdate` (events and both
seats' views) on the table's update channel for the gateways, atomically: one round trip. A
stale `seq` means another replica won: the caller re-reads and retries.

Keys, all with the table's shard hash tag `{s<n>}` (services/contracts/shards.py), so each script
touches one Redis Cluster slot: `t:{s<n>}:<id>` (seq, state, meta, relayed), `...:<id>:ev`
(stream), `...:<id>:cmd` ("<seat>:<command id>" -> "seq:count"), channel `...:<id>:up` (updates,
see services/contracts/redis_keys.py), `clocks:{s<n>}` (table id -> deadline ms), `relay:{s<n>}`
(table id -> ms of its oldest unrelayed event), `...:<id>:rec:<match>` (a finished match's
record: written by the commit that ends the match, in the same script, so an ended match always
has its record and its seed revealed); and `prefs:<player>`. The clock wake-up channel is no key:
the script names it in ARGV (a channel is not bound to a slot). The commit
that ends a match marks the table `finished` (naming its record); once the relay has every event
of it on Kafka, the table's keys and the record expire after FINISHED_TTL_S (a rematch's commit
makes the table's keys persistent again), so nothing expires before it is on Kafka.
"""

from __future__ import annotations

import json
from asyncio import gather
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio as redis_asyncio
from redis.asyncio.cluster import RedisCluster

from engine.state import TableState
from services.common.connections import evalsha, evalsha_many, reply_text
from services.common.lean_redis import LeanRedis
from services.common.log_port import KEPT, Receipt
from services.common.node_pipelines import node_of, raise_first, read_slots_again, run_by_node
from services.contracts import money_keys
from services.contracts.redis_keys import (
    WAKE_CHANNEL,
    clocks_key,
    commands_key,
    record_key,
    relay_key,
    relay_lock_key,
    stream_entries,
    stream_key,
    table_key,
    table_prefs_key,
    unconfirmed_key,
    update_channel,
)
from services.contracts.shards import VIRTUAL_SHARDS, shard_of
from services.table.adapters import state_codec as codec
from services.table.ports import (
    Commit,
    CommitResult,
    CommitStatus,
    Entry,
    Loaded,
    MatchRecord,
)

# A finished match's keys (state, stream, command ids, record) expire FINISHED_TTL_S after all
# its events are on Kafka: time enough for a rematch (which persists them again), resuming
# clients, the wallet's consumer and reconciler. The leaderboard's archive keeps the history.
FINISHED_TTL_S = money_keys.FINISHED_TTL_S
RECORD_TTL_S = 86_400  # the record's own bound, should the relay never catch up
# The commit refuses a `now` ahead of the store's clock (TIME: the reference, I-40) and one
# trailing it by more than this (a replica's estimate gone stale): services/table/store_clock.py.
CLOCK_MAX_BEHIND_MS = 10_000

_COMMIT = """
local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = tonumber(ARGV[6])
if now > clock then return {'CLOCK_AHEAD', tostring(clock)} end
if now < clock - MAX_BEHIND then return {'CLOCK_BEHIND', tostring(clock)} end
local cur = redis.call('HGET', KEYS[1], 'seq')
if ARGV[1] == '-1' then
  if cur then return {'EXISTS', cur} end
  cur = '0'
elseif not cur then
  return {'NO_TABLE', '0'}
end
if ARGV[5] ~= '' then
  local prev = redis.call('HGET', KEYS[4], ARGV[5])
  if prev then return {'DUP', prev} end
end
if ARGV[1] ~= '-1' and cur ~= ARGV[1] then return {'CONFLICT', cur} end
local seq = tonumber(cur)
local n = (#ARGV - 11) / 2
for i = 1, n do
  -- 'k': the event's kind; 'n' on a commit's first event: how many it made (the relay's record)
  if i == 1 then
    redis.call('XADD', KEYS[2], (seq + i) .. '-0', 'e', ARGV[11 + i], 'k', ARGV[11 + n + i], 'n', n)
  else
    redis.call('XADD', KEYS[2], (seq + i) .. '-0', 'e', ARGV[11 + i], 'k', ARGV[11 + n + i])
  end
end
if ARGV[9] ~= '' then
  redis.call('SET', KEYS[7], ARGV[9], 'EX', RECORD_TTL)
  redis.call('HSET', KEYS[1], 'finished', KEYS[7])
end
local new = seq + n
local sooner = '0'
redis.call('HSET', KEYS[1], 'seq', new, 'state', ARGV[2])
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'meta', ARGV[7])
  redis.call('HDEL', KEYS[1], 'finished')
  redis.call('PERSIST', KEYS[1]); redis.call('PERSIST', KEYS[2]); redis.call('PERSIST', KEYS[4])
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[3], ARGV[4])
else
  -- Wake the clock workers only when the shard's earliest deadline comes sooner: one that
  -- moves later (every move pushes the mover's on) would only wake them early for nothing,
  -- and a worker that wakes at the old one reads the shard again anyway.
  -- No channel (ARGV[10] ''): the committing replica's own clock worker looks after the shard
  -- and is told by the reply instead (every replica reads every wake-up published).
  local before = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
  if before[1] == nil or tonumber(ARGV[3]) < tonumber(before[2]) then
    sooner = '1'
    if ARGV[10] ~= '' then redis.call('PUBLISH', ARGV[10], ARGV[11] .. ':' .. ARGV[3]) end
  end
end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[4], ARGV[5], new .. ':' .. n) end
if n > 0 then redis.call('ZADD', KEYS[5], 'NX', ARGV[6], ARGV[4]) end
if ARGV[8] ~= '' then redis.call('PUBLISH', KEYS[6], ARGV[8]) end
return {'OK', tostring(new), sooner}
""".replace("RECORD_TTL", str(RECORD_TTL_S)).replace("MAX_BEHIND", str(CLOCK_MAX_BEHIND_MS))

# Put the clocks entry back in line with the state (a replica saw a stale deadline).
_RESCHEDULE = """
if redis.call('HGET', KEYS[1], 'seq') ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('ZREM', KEYS[2], ARGV[3])
else redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3]) end
return 1
"""

# After the relay published up to A[1] (table id A[2]): end the relay lease of A[3] (K[5]), move
# the pointer forward, unmark when caught up. A finished table whose events are all on Kafka
# starts its grace period: its keys expire. With a receipt to confirm (A[4], the last record's,
# "" for none: KEPT, or nothing sent) the receipt is kept and the table stays in its shard's
# unconfirmed set (K[6], A[5]: now) until the log says every group has read it. K: state hash,
# relay set, stream, commands, relay lock, unconfirmed set.
_ACK_ONE = """
local function ack(K, A)
  if redis.call('GET', K[5]) == A[3] then redis.call('DEL', K[5]) end
  local relayed = tonumber(redis.call('HGET', K[1], 'relayed') or '0')
  local upto = tonumber(A[1])
  if upto > relayed then redis.call('HSET', K[1], 'relayed', upto); relayed = upto end
  if A[4] ~= '' then
    redis.call('HSET', K[1], 'rr', A[4], 'rs', upto)
    if upto > tonumber(redis.call('HGET', K[1], 'consumed') or '0') then
      redis.call('ZADD', K[6], A[5], A[2])
    end
  end
  local seq = tonumber(redis.call('HGET', K[1], 'seq') or '0')
  if relayed >= seq then
    redis.call('ZREM', K[2], A[2])
    local record = redis.call('HGET', K[1], 'finished')
    if record then
      redis.call('EXPIRE', K[1], FINISHED_TTL)
      redis.call('EXPIRE', K[3], FINISHED_TTL)
      redis.call('EXPIRE', K[4], FINISHED_TTL)
      -- The record's name is stored by the final commit: same hash tag, so the same slot.
      redis.call('EXPIRE', record, FINISHED_TTL)
    end
  end
end
""".replace("FINISHED_TTL", str(FINISHED_TTL_S))
ACK_KEYS, ACK_ARGS = 6, 5
# One table (a Valkey Cluster: a script's keys share a slot).
_RELAY_ACK = _ACK_ONE + "ack(KEYS, ARGV)\nreturn 1\n"
# Every table of a relay pass in one call (a standalone Redis): the per-table calls of a
# pipeline cost redis-py more than the relay's Kafka producer did.
_RELAY_ACK_ALL = (
    _ACK_ONE
    + """
for i = 0, #KEYS / ACK_KEYS - 1 do
  ack({unpack(KEYS, i * ACK_KEYS + 1, (i + 1) * ACK_KEYS)},
      {unpack(ARGV, i * ACK_ARGS + 1, (i + 1) * ACK_ARGS)})
end
return 1
""".replace("ACK_KEYS", str(ACK_KEYS)).replace("ACK_ARGS", str(ACK_ARGS))
)

# Lease every table of a relay pass (a standalone Redis): KEYS in pairs (its relay lock, its
# state hash), ARGV[1] the relay's token, ARGV[2] the lease's ms, then the fields to read; per
# table the fields, or false where another relay holds the lease.
_LEASE_ALL = """
local fields = {unpack(ARGV, 3)}
local out = {}
for i = 1, #KEYS, 2 do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    out[#out + 1] = redis.call('HMGET', KEYS[i + 1], unpack(fields))
  else
    out[#out + 1] = false
  end
end
return out
"""

# Every group has read the table's events up to ARGV[1]: move `consumed`; out of the shard's
# unconfirmed set (KEYS[2]) once it reaches the relayed pointer.
_CONFIRM = """
local consumed = tonumber(redis.call('HGET', KEYS[1], 'consumed') or '0')
local upto = tonumber(ARGV[1])
if upto > consumed then redis.call('HSET', KEYS[1], 'consumed', upto); consumed = upto end
if consumed >= tonumber(redis.call('HGET', KEYS[1], 'relayed') or '0') then
  redis.call('ZREM', KEYS[2], ARGV[2])
end
return consumed
"""

# The broker forgot what it held (a new incarnation): relay the table again from `consumed`,
# the last seq every group had read. KEYS: the table, its shard's relay and unconfirmed sets.
_REPLAY = """
if not redis.call('HGET', KEYS[1], 'seq') then
  redis.call('ZREM', KEYS[3], ARGV[1]); return 0
end
local consumed = redis.call('HGET', KEYS[1], 'consumed') or '0'
redis.call('HSET', KEYS[1], 'relayed', consumed)
redis.call('HDEL', KEYS[1], 'rr', 'rs', 'rg', 'rp', 'ro', 'ri')
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
return 1
"""

_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# One read (ARGV[1], its arguments after the key ARGV[2..]) on every key, in one call: the
# per-shard sweeps read 512 shards' sets a replica, and 512 pipelined commands cost redis-py
# ~70 us each to pack and parse (an idle table replica's CPU was 40% these sweeps). Only the
# non-empty replies come back, each after its key's index (1-based). A standalone Redis only:
# a Valkey Cluster refuses one script over many slots.
_EACH = """
local out = {}
for i, key in ipairs(KEYS) do
  local r = redis.call(ARGV[1], key, unpack(ARGV, 2))
  if (type(r) == 'table' and #r > 0) or (type(r) == 'number' and r ~= 0) then
    out[#out + 1] = i
    out[#out + 1] = r
  end
end
return out
"""


# A cluster pipeline costs redis-py ~30 us of CPU a command, packed and parsed without a break:
# 342 shards' (a replica's third) held the event loop ~11 ms at best, 30 ms and more on a busy
# box, every sweep, and whatever deadline fell due meanwhile waited. Chunks let it in between.
CLUSTER_CHUNK = 48


# The pointers and the last record's receipt. (A hash written before receipts, 2026-12, kept an
# embedded log's placement in rg/rp/ro/ri instead: read as none, which that log answers LOST,
# so such a table is relayed again from what every group read, and consumers dedupe.)
_RELAY_FIELDS = ("relayed", "consumed", "rr")


# Tables per script call of a relay pass: a call blocks Redis while it runs, so a sweep's
# thousands of tables go as several calls (pipelined: still one round trip).
TABLES_PER_CALL = 128
C = TypeVar("C")


def _chunked(items: list[C]) -> list[list[C]]:
    return [items[i : i + TABLES_PER_CALL] for i in range(0, len(items), TABLES_PER_CALL)]


def _relay_state(raw: list[Any]) -> RelayState:
    relayed, consumed, receipt = raw
    return RelayState(
        relayed=int(relayed or 0),
        consumed=int(consumed or 0),
        receipt=Receipt(receipt.decode()) if receipt else KEPT,
    )


def _scored(reply: list[Any]) -> list[tuple[bytes, int]]:
    """A sorted-set range WITHSCORES as (member, whole ms score): flat ([member, score, ...])
    from a script, [member, score] pairs from a RESP3 pipeline."""
    if reply and isinstance(reply[0], list):
        return [(member, int(score)) for member, score in reply]
    pairs = zip(reply[::2], reply[1::2], strict=True)
    return [(member, int(float(score))) for member, score in pairs]


def _entry(eid: bytes, fields: dict[bytes, bytes]) -> Entry:
    return Entry(
        int(eid.split(b"-")[0]),
        fields[b"e"],
        fields.get(b"k", b"").decode(),
        int(fields.get(b"n", b"0")),
    )


@dataclass(frozen=True)
class RelayState:
    """What the relay knows of a table: its pointers and its last record's receipt, while the
    log has not said every group read it (KEPT: none to ask about)."""

    relayed: int
    consumed: int = 0
    receipt: Receipt = KEPT


def encode_state(state: TableState) -> bytes:
    return codec.dumps(state)


def decode_state(data: bytes) -> TableState:
    return codec.loads(data)


class TableStore:
    def __init__(self, client: redis_asyncio.Redis, hot: LeanRedis | None = None) -> None:
        # redis-py's reply types depend on decode_responses; this store always reads bytes.
        self.redis: Any = client
        # The scripts (the commit on every command's path, the relay's on every pass) go by the
        # lean client when there is one (a standalone Redis: services/common/lean_redis.py);
        # the plain commands by redis-py.
        self.hot = hot
        self._commit = client.register_script(_COMMIT)
        self._reschedule = client.register_script(_RESCHEDULE)
        self._relay_ack = client.register_script(_RELAY_ACK)
        self._relay_ack_all = client.register_script(_RELAY_ACK_ALL)
        self._lease_all = client.register_script(_LEASE_ALL)
        self._confirm = client.register_script(_CONFIRM)
        self._replay = client.register_script(_REPLAY)
        self._unlock = client.register_script(_UNLOCK)
        self._each_script = client.register_script(_EACH)
        self._cluster = isinstance(client, RedisCluster)
        if hot is not None and self._cluster:  # it would send every key to one node
            raise ValueError("the lean client serves a standalone Redis, not a cluster")

    async def _run(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        if self.hot is not None:
            return await self.hot.evalsha(script, keys, args)
        return await evalsha(self.redis, script, keys, args)

    async def _run_many(self, script: Any, calls: list[tuple[list[str], list[Any]]]) -> list[Any]:
        if self.hot is not None:  # pipelined on its one connection
            return list(await gather(*(self.hot.evalsha(script, k, a) for k, a in calls)))
        return await evalsha_many(self.redis, script, calls)

    async def load(self, table_id: str) -> Loaded | None:
        seq, state, meta, relayed = await self.redis.hmget(
            table_key(table_id), ["seq", "state", "meta", "relayed"]
        )
        if seq is None or state is None:
            return None
        return Loaded(int(seq), decode_state(state), json.loads(meta), int(relayed or 0))

    async def commit(self, c: Commit) -> CommitResult:
        """Atomically apply a transition (see Commit): all of it or, if the table moved on, the
        command was seen, or a create finds it there, none of it."""
        kinds = c.kinds if c.kinds is not None else [""] * len(c.events)
        shard = shard_of(c.table_id)
        args: list[Any] = [
            "-1" if c.expected_seq is None else str(c.expected_seq),
            encode_state(c.state),
            "" if c.deadline_ms is None else str(c.deadline_ms),
            c.table_id,
            c.command_field,
            str(c.now_ms),
            "" if c.meta is None else json.dumps(c.meta),
            c.update,
            "" if c.record is None else c.record.encode(),
            WAKE_CHANNEL if c.wake else "",
            str(shard),
            *c.events,
            *kinds,
        ]
        keys = [
            table_key(c.table_id),
            stream_key(c.table_id),
            clocks_key(shard),
            commands_key(c.table_id),
            relay_key(shard),
            update_channel(c.table_id),
            record_key(c.table_id, c.record.match_id if c.record else ""),
        ]
        status, value, *sooner = await self._run(self._commit, keys, args)
        status = CommitStatus(reply_text(status))
        value = reply_text(value)
        if status is CommitStatus.DUP:
            seq, count = value.split(":")
            return CommitResult(status, int(seq), int(count))
        return CommitResult(
            status, int(value), sooner=bool(sooner) and reply_text(sooner[0]) == "1"
        )

    async def wake(self, shard: int, at_ms: int) -> None:
        """Tell the clock workers that `shard`'s earliest deadline is now `at_ms`."""
        await self.redis.publish(WAKE_CHANNEL, f"{shard}:{at_ms}")

    async def command_result(self, table_id: str, field: str) -> tuple[int, int] | None:
        """(seq after, events produced) of an applied command (`command_field`), or None."""
        raw = await self.redis.hget(commands_key(table_id), field)
        if raw is None:
            return None
        seq, count = raw.decode().split(":")
        return int(seq), int(count)

    async def relayed(self, table_id: str) -> int:
        """The last seq the Kafka relay published for this table."""
        return int(await self.redis.hget(table_key(table_id), "relayed") or 0)

    async def reschedule(self, table_id: str, seq: int, deadline_ms: int | None) -> bool:
        done = await self._reschedule(
            keys=[table_key(table_id), clocks_key(shard_of(table_id))],
            args=[str(seq), "" if deadline_ms is None else str(deadline_ms), table_id],
        )
        return bool(done)

    async def events(
        self, table_id: str, after_seq: int, count: int = 500
    ) -> list[tuple[int, bytes]]:
        entries = await self.redis.xrange(stream_key(table_id), min=f"({after_seq}-0", count=count)
        return stream_entries(entries)

    async def deadline(self, table_id: str) -> int | None:
        score = await self.redis.zscore(clocks_key(shard_of(table_id)), table_id)
        return None if score is None else int(score)

    async def unschedule(self, table_id: str) -> None:
        await self.redis.zrem(clocks_key(shard_of(table_id)), table_id)

    async def due(self, shards: Iterable[int], now_ms: int, limit: int) -> list[str]:
        """Tables whose deadline has come over `shards`, the most overdue first, at most `limit`
        in all: after a backlog (a deal's first deadlines, a failover) the latest are fired
        first, whichever shard holds them. One round trip (on a Valkey Cluster, one per
        CLUSTER_CHUNK shards: `_each`)."""
        replies = await self._each(
            shards, clocks_key, "ZRANGEBYSCORE", "-inf", now_ms, "WITHSCORES", "LIMIT", 0, limit
        )
        found = sorted(
            (score, item) for items in replies.values() for item, score in _scored(items)
        )
        return [item.decode() for _, item in found[:limit]]

    async def earliest(self, shards: Iterable[int]) -> dict[int, int]:
        """Each shard's earliest deadline (shards without one are left out). One round trip."""
        replies = await self._each(shards, clocks_key, "ZRANGE", 0, 0, "WITHSCORES")
        return {s: _scored(first)[0][1] for s, first in replies.items()}

    async def pending_tables(
        self, shards: Iterable[int] | None = None, limit: int = 50
    ) -> list[tuple[str, int]]:
        """Tables with unrelayed events and the ms of the oldest, over `shards` (all when None),
        at most `limit` per shard, oldest first. One round trip."""
        replies = await self._each(
            range(VIRTUAL_SHARDS) if shards is None else shards,
            relay_key,
            "ZRANGE",
            0,
            limit - 1,
            "WITHSCORES",
        )
        found = [(i.decode(), score) for items in replies.values() for i, score in _scored(items)]
        return sorted(found, key=lambda pair: pair[1])

    async def live_tables(self, shards: Iterable[int] | None = None) -> int:
        """Tables with a pending deadline, over `shards` (all when None)."""
        replies = await self._each(
            range(VIRTUAL_SHARDS) if shards is None else shards, clocks_key, "ZCARD"
        )
        return sum(int(n) for n in replies.values())

    async def _each(
        self, shards: Iterable[int], key: Callable[[int], str], command: str, *args: Any
    ) -> dict[int, Any]:
        """`command key *args` on each shard's key: {shard: raw reply}, non-empty replies only.
        One round trip on a standalone Redis (one script call); on a cluster, a pipeline per
        CLUSTER_CHUNK shards, one after another, each node's part failing apart from the others'
        (`node_pipelines`)."""
        listed = list(shards)
        if not listed:
            return {}
        if not self._cluster:
            flat = await self._run(self._each_script, [key(s) for s in listed], [command, *args])
            indexed = zip(flat[::2], flat[1::2], strict=True)
            return {listed[int(i) - 1]: reply for i, reply in indexed}
        found: dict[int, Any] = {}
        for at in range(0, len(listed), CLUSTER_CHUNK):
            chunk = listed[at : at + CLUSTER_CHUNK]
            commands = [(command, key(shard), *args) for shard in chunk]
            replies = raise_first(await run_by_node(self.redis, commands))
            found.update((s, reply) for s, reply in zip(chunk, replies, strict=True) if reply)
        return found

    def nodes_of(self, shards: Iterable[int]) -> dict[str, list[int]]:
        """`shards` grouped by the node that serves them (one group on a standalone Redis)."""
        groups: dict[str, list[int]] = {}
        for shard in shards:
            groups.setdefault(node_of(self.redis, clocks_key(shard)), []).append(shard)
        return groups

    async def read_slots_again(self, node: str) -> None:
        """A node failed: learn where its slots are now (a replica may have taken them)."""
        await read_slots_again(self.redis, [node])

    async def lease_for_relay(
        self, table_ids: list[str], token: str, ttl_ms: int
    ) -> dict[str, RelayState]:
        """Lease each table for relaying; {leased table: what the relay knows of it}. One round
        trip. A table whose node failed is not leased (a lock it may have set expires)."""
        if not table_ids:
            return {}
        if not self._cluster:
            chunks = _chunked(table_ids)
            replies = await self._run_many(
                self._lease_all,
                [
                    (
                        [k for t in chunk for k in (relay_lock_key(t), table_key(t))],
                        [token, ttl_ms, *_RELAY_FIELDS],
                    )
                    for chunk in chunks
                ],
            )
            states = [raw for reply in replies for raw in reply]
            return {t: _relay_state(raw) for t, raw in zip(table_ids, states, strict=True) if raw}
        commands: list[tuple[Any, ...]] = []
        for table_id in table_ids:
            commands.append(("SET", relay_lock_key(table_id), token, "NX", "PX", ttl_ms))
            commands.append(("HMGET", table_key(table_id), *_RELAY_FIELDS))
        replies = await run_by_node(self.redis, commands)
        return {
            table_id: _relay_state(replies[2 * i + 1])
            for i, table_id in enumerate(table_ids)
            if replies[2 * i]
            and not isinstance(replies[2 * i], Exception)
            and not isinstance(replies[2 * i + 1], Exception)
        }

    async def events_after(self, pointers: dict[str, int]) -> dict[str, list[Entry]]:
        """Each table's events after its pointer (at most 500 each). One round trip."""
        commands = [
            ("XRANGE", stream_key(t), f"({n}-0", "+", "COUNT", 500) for t, n in pointers.items()
        ]
        replies = raise_first(await run_by_node(self.redis, commands))
        return {
            table_id: [_entry(eid, fields) for eid, fields in entries]
            for table_id, entries in zip(pointers, replies, strict=True)
        }

    async def relay_ack_many(
        self,
        upto: dict[str, int],
        where: dict[str, Receipt] | None = None,
        now_ms: int = 0,
        token: str = "",
    ) -> None:
        """Move each table's relayed pointer (unmarking caught-up tables) and end the relay
        lease `token` holds on it. With a receipt in `where` (not KEPT), keep it as the
        table's last record's and mark the table unconfirmed. One round trip."""
        calls = []
        for t, seq in upto.items():
            shard = shard_of(t)
            placed = where.get(t) if where is not None else None
            keys = [
                table_key(t),
                relay_key(shard),
                stream_key(t),
                commands_key(t),
                relay_lock_key(t),
                unconfirmed_key(shard),
            ]
            calls.append((keys, [seq, t, token, placed or KEPT, now_ms]))
        if not calls:
            return
        if not self._cluster:  # the tables in a few calls
            await self._run_many(
                self._relay_ack_all,
                [
                    ([k for keys, _ in chunk for k in keys], [a for _, args in chunk for a in args])
                    for chunk in _chunked(calls)
                ],
            )
            return
        await self._run_many(self._relay_ack, calls)

    async def unconfirmed(
        self, shards: Iterable[int], limit: int = 200
    ) -> tuple[dict[str, RelayState], int | None]:
        """Tables whose last records some group may not have read, over `shards`, and the ms
        the oldest of them was relayed (None: none). Two round trips."""
        replies = await self._each(shards, unconfirmed_key, "ZRANGE", 0, limit - 1, "WITHSCORES")
        found = [(t.decode(), at) for items in replies.values() for t, at in _scored(items)]
        if not found:
            return {}, None
        tables = [t for t, _ in found]
        commands = [("HMGET", table_key(t), *_RELAY_FIELDS) for t in tables]
        states = raise_first(await run_by_node(self.redis, commands))
        oldest = min(at for _, at in found)
        return {t: _relay_state(raw) for t, raw in zip(tables, states, strict=True)}, oldest

    async def confirm_many(self, upto: dict[str, int]) -> None:
        """Every group has read these tables' events up to the seqs given. One round trip."""
        calls = [
            ([table_key(t), unconfirmed_key(shard_of(t))], [seq, t]) for t, seq in upto.items()
        ]
        await self._run_many(self._confirm, calls)

    async def replay_many(self, table_ids: Iterable[str], now_ms: int) -> None:
        """The broker forgot: relay these tables again from what every group had read. One
        round trip."""
        calls = [
            ([table_key(t), relay_key(shard_of(t)), unconfirmed_key(shard_of(t))], [t, now_ms])
            for t in table_ids
        ]
        await self._run_many(self._replay, calls)

    async def release_relay(self, table_ids: list[str], token: str) -> None:
        await self._run_many(self._unlock, [([relay_lock_key(t)], [token]) for t in table_ids])

    async def get_prefs(self, player_id: str) -> dict[str, str]:
        raw = await self.redis.hgetall(table_prefs_key(player_id))
        return {k.decode(): v.decode() for k, v in raw.items()}

    async def set_prefs(self, player_id: str, **prefs: str) -> None:
        await self.redis.hset(table_prefs_key(player_id), mapping=prefs)

    async def get_record(self, table_id: str, match_id: str) -> MatchRecord | None:
        raw = await self.redis.get(record_key(table_id, match_id))
        return None if raw is None else MatchRecord.decode(raw)
