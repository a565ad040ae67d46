"""An in-memory PresenceRepository (services/gateway/adapters/redis_presence.py) for unit tests of
presence, held to the Redis store by tests/gateway/test_presence_store.py. One event loop, so
each method is atomic, as the Redis store's scripts are."""

from __future__ import annotations

from services.gateway.ports import Stream


class MemoryPresenceStore:
    def __init__(self) -> None:
        self.leases: dict[str, int] = {}  # gateway -> expiry ms
        self.pairs: dict[tuple[str, str], set[tuple[str, str]]] = {}  # -> (gateway, stream)
        self.streams: dict[str, set[Stream]] = {}  # gateway -> its streams

    async def take_lease(self, gateway: str, expiry_ms: int) -> None:
        self.leases[gateway] = expiry_ms

    async def renew_lease(self, gateway: str, expiry_ms: int, now_ms: int) -> bool:
        expiry = self.leases.get(gateway)
        if expiry is None or expiry < now_ms:
            return False
        self.leases[gateway] = expiry_ms
        return True

    async def lapsed_gateways(self, now_ms: int, limit: int) -> list[str]:
        lapsed = sorted((expiry, g) for g, expiry in self.leases.items() if expiry < now_ms)
        return [gateway for _, gateway in lapsed[:limit]]

    async def forget(self, gateway: str, now_ms: int) -> None:
        if self.leases.get(gateway, now_ms) < now_ms:
            del self.leases[gateway]

    async def open_stream(self, gateway: str, table_id: str, player_id: str, stream: str) -> bool:
        self.streams.setdefault(gateway, set()).add((table_id, player_id, stream))
        members = self.pairs.setdefault((table_id, player_id), set())
        added = (gateway, stream) not in members
        members.add((gateway, stream))
        return added and len(members) == 1

    async def close_stream(self, gateway: str, table_id: str, player_id: str, stream: str) -> bool:
        members = self.pairs.get((table_id, player_id), set())
        removed = (gateway, stream) in members
        members.discard((gateway, stream))
        last = removed and not members
        if not members:
            self.pairs.pop((table_id, player_id), None)
        self.streams.get(gateway, set()).discard((table_id, player_id, stream))
        return last

    async def streams_of(self, gateway: str, limit: int) -> list[Stream]:
        return sorted(self.streams.get(gateway, set()))[:limit]
