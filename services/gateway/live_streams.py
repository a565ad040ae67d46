"""The Play streams live on this gateway, by player: what a ban seen here ends at once, and what
a newer stream of the same player to the same table (another tab or device) replaces.

Made before the ban list (which is told of each ban at construction: `Bans(on_ban=...)`) and
the table feed (`TableFeed(on_seat=...)`), and handed to the servicer, so no constructor sets a
hook on another part."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

from bg.gateway.v1 import gateway_pb2
from services.common.errors import PermissionDenied, ServiceError

Queue = asyncio.Queue[gateway_pb2.PlayUpdate | None]


class LiveStreams:
    def __init__(self) -> None:
        # player -> each live stream's queue -> (its table, its stream id)
        self._by_player: dict[str, dict[Queue, tuple[str, str]]] = {}

    def opened(self, player_id: str, queue: Queue, table_id: str = "", stream: str = "") -> None:
        self._by_player.setdefault(player_id, {})[queue] = (table_id, stream)

    def closed(self, player_id: str, queue: Queue) -> None:
        mine = self._by_player.get(player_id)
        if mine is not None:
            mine.pop(queue, None)
            if not mine:
                del self._by_player[player_id]

    def cut_off(self, player_id: str) -> None:
        """A ban seen by this gateway: each live stream of the player gets the error and ends."""
        banned = PermissionDenied("BANNED", "this player is banned")
        for queue in self._by_player.pop(player_id, {}):
            _end(queue, banned)

    def taken(self, table_id: str, player_id: str, stream: str) -> None:
        """`stream` (here or on another gateway) took the player's seat at the table: their
        older streams to it here are told and end. Stream ids begin with their opening time
        (`stream_id`), so two tabs opening at once keep the newer, not neither."""
        moved = ServiceError(
            "SEAT_TAKEN", "this seat was opened in another tab or device; join again to play here"
        )
        for queue, (table, other) in list(self._by_player.get(player_id, {}).items()):
            if table == table_id and other < stream:
                _end(queue, moved)


_last_ns = 0


def stream_id() -> str:
    """A new stream's id: its opening time (ns, increasing within a process) first, so ids order
    as the streams opened."""
    global _last_ns
    _last_ns = max(_last_ns + 1, time.time_ns())
    return f"{_last_ns:020d}-{uuid.uuid4().hex[:12]}"


def _end(queue: Queue, why: ServiceError) -> None:
    ended = gateway_pb2.CommandError(error=why.to_proto(), status=why.status.name)
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(gateway_pb2.PlayUpdate(error=ended))
        queue.put_nowait(None)
