"""Spectators' views, read once per commit per gateway however many watch a table.

A spectator's view is not in the table's pushed update (that holds the two seats' views), so
each commit costs a GetView; the watchers of one table on this gateway share it: the first to
ask for a seq starts the read, the others await the same one. A table's entry goes with its
last watcher.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from bg.table.v1 import table_pb2


class SpectatorViews:
    def __init__(self, read: Callable[[str], Awaitable[table_pb2.TableView]]) -> None:
        self.read = read  # table id -> its spectator view
        self._latest: dict[str, tuple[int, asyncio.Future[table_pb2.TableView]]] = {}
        self._watchers: dict[str, int] = {}

    def watch(self, table_id: str) -> None:
        self._watchers[table_id] = self._watchers.get(table_id, 0) + 1

    def unwatch(self, table_id: str) -> None:
        left = self._watchers.get(table_id, 1) - 1
        if left > 0:
            self._watchers[table_id] = left
        else:
            self._watchers.pop(table_id, None)
            self._latest.pop(table_id, None)

    async def view(self, table_id: str, seq: int) -> table_pb2.TableView:
        """A view at `seq` or later (one read shared by every watcher asking for it)."""
        cached = self._latest.get(table_id)
        if cached is None or cached[0] < seq or (cached[1].done() and cached[1].exception()):
            cached = (seq, asyncio.ensure_future(self.read(table_id)))
            if table_id in self._watchers:
                self._latest[table_id] = cached
        return await asyncio.shield(cached[1])
