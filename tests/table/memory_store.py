"""An in-memory TableRepository (services/table/repository.py) for unit tests of the table
core: the same answers as the Redis store's Lua script (EXISTS, NO_TABLE, DUP, CONFLICT, OK),
held to it by tests/table/test_repository.py. One event loop, so each method is atomic."""

from __future__ import annotations

import copy
from typing import Any

from engine.state import TableState
from services.table.repository import CommitResult, CommitStatus, Loaded, TableMeta
from services.table.store import decode_state, encode_state


class MemoryTableStore:
    def __init__(self) -> None:
        self.tables: dict[str, dict[str, Any]] = {}  # seq, state (bytes), meta, relayed
        self.streams: dict[str, list[tuple[int, bytes]]] = {}
        self.commands: dict[str, dict[str, tuple[int, int]]] = {}
        self.deadlines: dict[str, int] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.prefs: dict[str, dict[str, str]] = {}
        self.updates: list[tuple[str, bytes]] = []  # what a commit publishes to the gateways

    async def load(self, table_id: str) -> Loaded | None:
        row = self.tables.get(table_id)
        if row is None:
            return None
        # Decoded afresh, as from Redis: a caller's changes never reach the stored state.
        meta = copy.deepcopy(row["meta"])
        return Loaded(row["seq"], decode_state(row["state"]), meta, row["relayed"])

    async def commit(
        self,
        table_id: str,
        expected_seq: int | None,
        state: TableState,
        deadline_ms: int | None,
        command_field: str,
        events: list[bytes],
        now_ms: int,
        meta: TableMeta | None = None,
        update: bytes = b"",
        record: dict[str, Any] | None = None,
        kinds: list[str] | None = None,
    ) -> CommitResult:
        row = self.tables.get(table_id)
        if expected_seq is None and row is not None:
            return CommitResult(CommitStatus.EXISTS, row["seq"])
        if expected_seq is not None and row is None:
            return CommitResult(CommitStatus.NO_TABLE, 0)
        seen = self.commands.get(table_id, {})
        if command_field and command_field in seen:
            seq, count = seen[command_field]
            return CommitResult(CommitStatus.DUP, seq, count)
        current = 0 if row is None else row["seq"]
        if expected_seq is not None and current != expected_seq:
            return CommitResult(CommitStatus.CONFLICT, current)
        stream = self.streams.setdefault(table_id, [])
        stream += [(current + i + 1, data) for i, data in enumerate(events)]
        new = current + len(events)
        if row is None:
            row = self.tables[table_id] = {"meta": {}, "relayed": 0}
        row["seq"], row["state"] = new, encode_state(state)
        if meta is not None:
            row["meta"] = copy.deepcopy(meta)
        if record is not None:
            self.records[f"{table_id}:{record['match_id']}"] = copy.deepcopy(record)
        if deadline_ms is None:
            self.deadlines.pop(table_id, None)
        else:
            self.deadlines[table_id] = deadline_ms
        if command_field:
            self.commands.setdefault(table_id, {})[command_field] = (new, len(events))
        if update:
            self.updates.append((table_id, update))
        return CommitResult(CommitStatus.OK, new)

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

    async def unschedule(self, table_id: str) -> None:
        self.deadlines.pop(table_id, None)

    async def get_record(self, table_id: str, match_id: str) -> dict[str, Any] | None:
        found = self.records.get(f"{table_id}:{match_id}")
        return None if found is None else copy.deepcopy(found)

    async def get_prefs(self, player_id: str) -> dict[str, str]:
        return dict(self.prefs.get(player_id, {}))

    async def set_prefs(self, player_id: str, **prefs: str) -> None:
        self.prefs.setdefault(player_id, {}).update(prefs)
