"""The operators' side of the tables' chat (services/identity/chat.py is the players'): the
queue of players' reports, a message taken out of every reader's history (and out of the live
streams that showed it), a player kept from chatting for a while. Everything here is the
chat's state in Redis (services/contracts/redis_keys.py), which the gateways read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bg.admin.v1 import admin_pb2
from bg.gateway.v1 import gateway_pb2
from services.common.clock import now_ms
from services.common.connections import reply_text
from services.common.errors import InvalidArgument
from services.contracts.redis_keys import (
    CHAT_KEEP_S,
    chat_channel,
    chat_key,
    chat_removed_key,
    chat_silenced_key,
)
from services.contracts.redis_keys import CHAT_REPORTS as REPORTS

MAX_SILENCE_S = 30 * 86_400


class ChatModeration:
    def __init__(self, redis: Any, now: Callable[[], int] = now_ms) -> None:
        self.redis = redis
        self.now = now

    async def reports(self, limit: int) -> list[admin_pb2.ChatReport]:
        """Reports waiting, oldest first."""
        out = []
        for entry_id, fields in await self.redis.xrange(REPORTS, count=limit):
            report = admin_pb2.ChatReport()
            report.ParseFromString(fields[b"r"])
            report.report_id = reply_text(entry_id)
            out.append(report)
        return out

    async def resolve(self, report_id: str) -> bool:
        return bool(await self.redis.xdel(REPORTS, report_id))

    async def remove(self, table_id: str, message_id: str) -> bool:
        """Leave a message out of GetChat from now on and tell the streams that got it."""
        found = None
        for _id, fields in await self.redis.xrange(chat_key(table_id)):
            message = gateway_pb2.ChatMessage()
            message.ParseFromString(fields[b"m"])
            if message.message_id == message_id:
                found = message
                break
        removed = chat_removed_key(table_id)
        if found is None or await self.redis.sismember(removed, message_id):
            return False  # gone with its day, or removed already (the streams were told)
        pipe = self.redis.pipeline(transaction=True)
        pipe.sadd(removed, message_id)
        pipe.expire(removed, CHAT_KEEP_S)
        found.text, found.removed = "", True
        pipe.publish(chat_channel(table_id), found.SerializeToString())
        added, _, _ = await pipe.execute()
        return bool(added)

    async def silence(self, player: str, seconds: int) -> int:
        """Keep `player` from chatting for `seconds` (0 lifts it); until when, in ms."""
        if not 0 <= seconds <= MAX_SILENCE_S:
            raise InvalidArgument(
                "INVALID_AMOUNT", f"seconds is 0..{MAX_SILENCE_S}", field="seconds"
            )
        if seconds == 0:
            await self.redis.delete(chat_silenced_key(player))
            return 0
        await self.redis.set(chat_silenced_key(player), "1", ex=seconds)
        return self.now() + seconds * 1000
