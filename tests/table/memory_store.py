"""An in-memory TableRepository (services/table/ports.py) for unit tests of the table
core: the same answers as the Redis store's Lua script (EXISTS, NO_TABLE, DUP, CONFLICT, OK),
held to it by tests/table/test_repository.py. One event loop, so each method is atomic."""

from __future__ import annotations

import copy
from typing import Any

from services.contracts.shards import shard_of
from services.table.adapters.redis_store import decode_state, encode_state
from services.table.ports import Commit, CommitResult, CommitStatus, Loaded, MatchRecord


class MemoryTableStore:
    def __init__(self) -> None:
        self.tables: dict[str, dict[str, Any]] = {}  # seq, state (bytes), meta, relayed
        self.streams: dict[str, list[tuple[int, bytes]]] = {}
        self.commands: dict[str, dict[str, tuple[int, int]]] = {}
        self.deadlines: dict[str, int] = {}
        self.records: dict[str, str] = {}  # encoded, as Redis holds them
        self.prefs: dict[str, dict[str, str]] = {}
        self.updates: list[tuple[str, bytes]] = []  # what a commit publishes to the gateways
        self.wakes: list[tuple[int, int]] = []  # the clock wake-ups published (shard, ms)

    async def load(self, table_id: str) -> Loaded | None:
        row = self.tables.get(table_id)
        if row is None:
            return None
        # Decoded afresh, as from Redis: a caller's changes never reach the stored state.
        meta = copy.deepcopy(row["meta"])
        return Loaded(row["seq"], decode_state(row["state"]), meta, row["relayed"])

    async def commit(self, c: Commit) -> CommitResult:
        row = self.tables.get(c.table_id)
        if c.expected_seq is None and row is not None:
            return CommitResult(CommitStatus.EXISTS, row["seq"])
        if c.expected_seq is not None and row is None:
            return CommitResult(CommitStatus.NO_TABLE, 0)
        seen = self.commands.get(c.table_id, {})
        if c.command_field and c.command_field in seen:
            seq, count = seen[c.command_field]
            return CommitResult(CommitStatus.DUP, seq, count)
        current = 0 if row is None else row["seq"]
        if c.expected_seq is not None and current != c.expected_seq:
            return CommitResult(CommitStatus.CONFLICT, current)
        stream = self.streams.setdefault(c.table_id, [])
        stream += [(current + i + 1, data) for i, data in enumerate(c.events)]
        new = current + len(c.events)
        if row is None:
            row = self.tables[c.table_id] = {"meta": {}, "relayed": 0}
        row["seq"], row["state"] = new, encode_state(c.state)
        if c.meta is not None:
            row["meta"] = copy.deepcopy(c.meta)
        if c.record is not None:
            self.records[f"{c.table_id}:{c.record.match_id}"] = c.record.encode()
        sooner = False
        if c.deadline_ms is None:
            self.deadlines.pop(c.table_id, None)
        else:
            shard = shard_of(c.table_id)
            before = min(
                (d for t, d in self.deadlines.items() if shard_of(t) == shard), default=None
            )
            sooner = before is None or c.deadline_ms < before
            if sooner and c.wake:
                self.wakes.append((shard, c.deadline_ms))
            self.deadlines[c.table_id] = c.deadline_ms
        if c.command_field:
            self.commands.setdefault(c.table_id, {})[c.command_field] = (new, len(c.events))
        if c.update:
            self.updates.append((c.table_id, c.update))
        return CommitResult(CommitStatus.OK, new, sooner=sooner)

    async def command_result(self, table_id: str, field: str) -> tuple[int, int] | None:
        return self.commands.get(table_id, {}).get(field)

    async def events(
        self, table_id: str, after_seq: int, count: int = 500
    ) -> list[tuple[int, bytes]]:
        return [e for e in self.streams.get(table_id, []) if e[0] > after_seq][:count]

    async def deadline(self, table_id: str) -> int | None:
        return self.deadlines.get(table_id)

    async def reschedule(self, table_id: str, seq: int, deadline_ms: int | None) -> bool:
        row = self.tables.get(table_id)
        if row is None or row["seq"] != seq:
            return False
        if deadline_ms is None:
            self.deadlines.pop(table_id, None)
        else:
            self.deadlines[table_id] = deadline_ms
        return True

    async def wake(self, shard: int, at_ms: int) -> None:
        self.wakes.append((shard, at_ms))

    async def unschedule(self, table_id: str) -> None:
        self.deadlines.pop(table_id, None)

    async def get_record(self, table_id: str, match_id: str) -> MatchRecord | None:
        found = self.records.get(f"{table_id}:{match_id}")
        return None if found is None else MatchRecord.decode(found)

    async def get_prefs(self, player_id: str) -> dict[str, str]:
        return dict(self.prefs.get(player_id, {}))

    async def set_prefs(self, player_id: str, **prefs: str) -> None:
        self.prefs.setdefault(player_id, {}).update(prefs)
