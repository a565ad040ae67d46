"""The Play streams live on this gateway, by player: what a ban seen here ends at once.

Made before the ban list (which is told of each ban at construction: `Bans(on_ban=...)`) and
handed to the servicer, so no constructor sets a hook on another part."""

from __future__ import annotations

import asyncio
import contextlib

from bg.gateway.v1 import gateway_pb2
from services.common.errors import PermissionDenied

Queue = asyncio.Queue[gateway_pb2.PlayUpdate | None]


class LiveStreams:
    def __init__(self) -> None:
        self._by_player: dict[str, set[Queue]] = {}

    def opened(self, player_id: str, queue: Queue) -> None:
        self._by_player.setdefault(player_id, set()).add(queue)

    def closed(self, player_id: str, queue: Queue) -> None:
        mine = self._by_player.get(player_id)
        if mine is not None:
            mine.discard(queue)
            if not mine:
                del self._by_player[player_id]

    def cut_off(self, player_id: str) -> None:
        """A ban seen by this gateway: each live stream of the player gets the error and ends."""
        banned = PermissionDenied("BANNED", "this player is banned")
        ended = gateway_pb2.CommandError(error=banned.to_proto(), status=banned.status.name)
        for queue in self._by_player.pop(player_id, set()):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(gateway_pb2.PlayUpdate(error=ended))
                queue.put_nowait(None)
