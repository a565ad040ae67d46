"""The tables' chat delivered live to the streams this gateway holds. A message is stored and
published by the identity service (services/identity/chat.py) on its table's chat channel; the
feed's reader hands it here, and it goes to each local Play or Watch stream that may read it
(table chat to the players, kibitz to the spectators), leaving out the readers who muted or
blocked its sender (asked of the identity service, once per message, so a mute made through any
gateway holds at once). Chat delivery never touches the chat's state itself."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bg.gateway.v1 import gateway_pb2

log = logging.getLogger("bg.gateway.chat")
TABLE = gateway_pb2.CHAT_CHANNEL_TABLE
# (sender, readers) -> the readers who muted or blocked the sender (SocialPort.hidden_from).
HiddenFrom = Callable[[str, list[str]], Awaitable[list[str]]]


@dataclass(eq=False)
class Listener:
    """A local Play or Watch stream's reader of a table's chat."""

    table_id: str
    viewer: str
    seated: bool
    deliver: Callable[[gateway_pb2.PlayUpdate], None]


class ChatDelivery:
    def __init__(self, hidden_from: HiddenFrom) -> None:
        self.hidden_from = hidden_from
        self.listeners: dict[str, set[Listener]] = {}
        self._inbox: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    def listen(self, listener: Listener) -> None:
        self.listeners.setdefault(listener.table_id, set()).add(listener)

    def unlisten(self, listener: Listener) -> None:
        here = self.listeners.get(listener.table_id)
        if here is not None:
            here.discard(listener)
            if not here:
                del self.listeners[listener.table_id]

    def received(self, table_id: str, data: bytes) -> None:
        """A message published on a table's chat channel (the feed's reader calls this)."""
        if table_id not in self.listeners:
            return
        self._inbox.put_nowait((table_id, data))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._deliver(), name="chat-delivery")

    async def _deliver(self) -> None:
        """One message at a time, so each stream gets a table's messages in the order sent."""
        while not self._inbox.empty():
            table_id, data = self._inbox.get_nowait()
            try:
                await self._deliver_one(table_id, data)
            except Exception:  # identity away: lost to live readers (GetChat has it)
                log.warning("chat delivery failed", extra={"table_id": table_id}, exc_info=True)

    async def _deliver_one(self, table_id: str, data: bytes) -> None:
        message = gateway_pb2.ChatMessage()
        message.ParseFromString(data)
        readers = [
            listener
            for listener in self.listeners.get(table_id, ())
            if listener.seated == (message.channel == TABLE)
        ]
        if not readers:
            return
        hidden = set(await self.hidden_from(message.sender_id, sorted({r.viewer for r in readers})))
        update = gateway_pb2.PlayUpdate(chat=message, table_id=table_id)
        for listener in readers:
            if listener.viewer not in hidden:
                listener.deliver(update)

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker
