"""An in-memory LobbyRepository (services/matchmaking/adapters/redis_lobby.py) for unit tests of the
lobby, held to the Redis store by tests/matchmaking/test_lobby_store.py. One event loop, so
each method is atomic, as the Redis store's scripts are. Expiry is not modelled: a test that
needs it runs on Redis."""

from __future__ import annotations

from collections import deque

from services.matchmaking.ports import HoldKind, PlayerSet


class MemoryLobbyStore:
    def __init__(self) -> None:
        self.docs: dict[str, str] = {}
        self.open: dict[str, int] = {}
        self.live: dict[str, int] = {}
        self.dealing: dict[str, int] = {}
        self.codes: dict[str, str] = {}
        self.players: dict[tuple[PlayerSet, str], set[str]] = {}
        self.queues: dict[str, deque[str]] = {}
        self.bot_tables: set[str] = set()
        self.scored: dict[str, str] = {}
        self.holds: dict[tuple[HoldKind, str, str], str] = {}
        self.restricted_ids: set[str] = set()  # an operator's fair-play restrictions

    async def read(self, table_id: str) -> str | None:
        return self.docs.get(table_id)

    async def create(self, table_id: str, doc: str, open_since_ms: int | None) -> None:
        self.docs[table_id] = doc
        if open_since_ms is not None:
            self.open[table_id] = open_since_ms

    async def create_if_absent(self, table_id: str, doc: str) -> bool:
        if table_id in self.docs:
            return False
        self.docs[table_id] = doc
        return True

    async def save_if_unchanged(
        self,
        table_id: str,
        read: str,
        doc: str,
        open_since_ms: int | None,
        dealing_since_ms: int | None,
    ) -> bool:
        if self.docs.get(table_id) != read:
            return False
        self.docs[table_id] = doc
        for index, score in ((self.open, open_since_ms), (self.dealing, dealing_since_ms)):
            if score is None:
                index.pop(table_id, None)
            else:
                index[table_id] = score
        return True

    async def reserve_code(self, code: str, table_id: str, ttl_s: int) -> bool:
        if code in self.codes:
            return False
        self.codes[code] = table_id
        return True

    async def code_table(self, code: str) -> str | None:
        return self.codes.get(code)

    async def add_player_table(self, kind: PlayerSet, player_id: str, table_id: str) -> None:
        self.players.setdefault((kind, player_id), set()).add(table_id)

    async def player_tables(self, kind: PlayerSet, player_id: str) -> list[str]:
        return sorted(self.players.get((kind, player_id), set()))

    async def drop_player_table(self, kind: PlayerSet, player_id: str, table_id: str) -> None:
        self.players.get((kind, player_id), set()).discard(table_id)

    async def open_tables(self, limit: int) -> list[str]:
        return _newest(self.open)[:limit]

    async def drop_open(self, table_id: str) -> None:
        self.open.pop(table_id, None)

    async def mark_live(self, table_id: str, at_ms: int) -> None:
        self.live[table_id] = at_ms

    async def live_tables(self, since_ms: int, limit: int) -> list[str]:
        for table_id in [t for t, at in self.live.items() if at < since_ms]:
            del self.live[table_id]
        return _newest(self.live)[:limit]

    async def drop_live(self, table_id: str) -> None:
        self.live.pop(table_id, None)

    async def dealing_before(self, cutoff_ms: int, limit: int) -> list[str]:
        due = [(at, t) for t, at in self.dealing.items() if at <= cutoff_ms]
        return [t for _, t in sorted(due)][:limit]

    async def drop_dealing(self, table_id: str) -> None:
        self.dealing.pop(table_id, None)

    async def pop_waiting(self, queue: str) -> str | None:
        waiting = self.queues.get(queue)
        return waiting.popleft() if waiting else None

    async def push_waiting(self, queue: str, table_id: str) -> None:
        self.queues.setdefault(queue, deque()).append(table_id)

    async def enqueue_if_empty(self, queue: str, table_id: str) -> bool:
        if self.queues.get(queue):
            return False
        self.queues.setdefault(queue, deque()).append(table_id)
        return True

    async def add_bot_table(self, table_id: str) -> None:
        self.bot_tables.add(table_id)

    async def scored_table(self, player_id: str) -> str | None:
        return self.scored.get(player_id)

    async def set_scored_table(self, player_id: str, table_id: str, ttl_s: int) -> None:
        self.scored[player_id] = table_id

    async def clear_scored_table(self, player_id: str) -> None:
        self.scored.pop(player_id, None)

    async def hold(
        self, kind: HoldKind, player_id: str, key: str, value: str, replacing: str, ttl_s: int
    ) -> str | None:
        held = self.holds.get((kind, player_id, key))
        if held is not None and held not in (value, replacing):
            return held
        self.holds[(kind, player_id, key)] = value
        return None

    async def release(self, kind: HoldKind, player_id: str, key: str, value: str) -> None:
        if self.holds.get((kind, player_id, key)) == value:
            del self.holds[(kind, player_id, key)]

    async def held(self, kind: HoldKind, player_id: str, key: str) -> str | None:
        return self.holds.get((kind, player_id, key))

    async def restricted(self, player_ids: list[str]) -> list[str]:
        return [p for p in player_ids if p in self.restricted_ids]


def _newest(index: dict[str, int]) -> list[str]:
    """Highest score first; ties by id descending, as Redis's ZREVRANGE orders them."""
    return [t for _, t in sorted(((at, t) for t, at in index.items()), reverse=True)]
