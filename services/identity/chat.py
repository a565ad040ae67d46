"""Table chat and kibitz (issue 29), held in Redis beside the table's keys and published on the
table's chat channel, so every gateway delivers it to the streams it holds
(services/gateway/chat_delivery.py, which asks `hidden_from` here of each message's readers).

- Table chat is between the table's two players; kibitz among its spectators. The players read
  kibitz (GetChat) once the match it was said during is over, never live.
- A message is kept in the table's chat stream (its last MAX_KEPT, for CHAT_KEEP_S after the last
  one) and published once; each gateway's delivery leaves out, per reader, the players that
  reader muted (`chat:mutes:<player>`, read at delivery, so a mute made on another gateway
  holds at once), and the players that reader blocked (services/identity/friends.py).
- A message's length is bounded (BG_CHAT_MAX_CHARS) and control characters are refused; a
  player's messages are limited over every identity replica (BG_CHAT_PER_S, bursts of
  BG_CHAT_BURST); guests may be kept out (BG_CHAT_GUESTS).
- Refused messages are stored nowhere and published to nobody.
"""

from __future__ import annotations

import logging
import secrets
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bg.admin.v1 import admin_pb2
from bg.gateway.v1 import gateway_pb2
from services.common.clock import now_ms
from services.common.connections import reply_text
from services.common.errors import InvalidArgument, NotFound, PermissionDenied, ServiceError
from services.common.shared_rate_limits import SharedLimiter, rate_limited
from services.contracts.redis_keys import (
    CHAT_KEEP_S,
    blocks_key,
    chat_channel,
    chat_key,
    chat_reported_key,
)
from services.contracts.redis_keys import (
    CHAT_REPORTS as REPORTS,
)
from services.contracts.redis_keys import (
    chat_mutes_key as _mutes_key,
)
from services.contracts.redis_keys import (
    chat_removed_key as _removed_key,
)
from services.contracts.redis_keys import (
    chat_silenced_key as _silenced_key,
)
from services.contracts.seats import ACCOUNT_PREFIX
from services.identity import forwarded_bounds

log = logging.getLogger("bg.identity.chat")
TABLE = gateway_pb2.CHAT_CHANNEL_TABLE
KIBITZ = gateway_pb2.CHAT_CHANNEL_KIBITZ
MAX_KEPT = 500  # messages kept per table
MAX_MUTED = 500  # players one player may mute
CONTEXT = 10  # messages before a reported one that the report keeps
MAX_REPORTS = 100_000


@dataclass(frozen=True)
class Seating:
    """What the chat needs to know of a table: who sits there, whether the caller may watch
    it, and the match now on it (over or not)."""

    player_ids: tuple[str, ...]
    watchable: bool
    match_id: str
    match_over: bool = False


# (table, the caller, whether the match's phase is needed) -> the table's Seating for the caller
# (services/identity/seating.py).
SeatingOf = Callable[[str, str, bool], Awaitable[Seating]]


def is_guest(player_id: str) -> bool:
    return not player_id.startswith(ACCOUNT_PREFIX)


def clean_text(text: str, max_chars: int) -> str:
    """The words as stored: trimmed, 1..max_chars characters, no control characters."""
    words = text.strip()
    if not words:
        raise InvalidArgument("CHAT_EMPTY", "say something", field="text")
    if len(words) > max_chars:
        raise InvalidArgument(
            "CHAT_TOO_LONG", f"a message is at most {max_chars} characters", field="text"
        )
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") for ch in words):
        raise InvalidArgument("CHAT_BAD_TEXT", "no control characters in a message", field="text")
    return words


def _readable(message: gateway_pb2.ChatMessage, seated: bool, seats: Seating) -> bool:
    """Table chat: by the players; kibitz: by spectators, and by the players once the match
    it was said during is over."""
    if message.channel == TABLE:
        return seated
    return not seated or message.match_id != seats.match_id or seats.match_over


def _texts(raw: Any) -> set[str]:
    return {reply_text(r) for r in raw}


class ChatRoom:
    def __init__(
        self,
        redis: Any,
        seating: SeatingOf,
        limiter: SharedLimiter,
        max_chars: int,
        guests_may_chat: bool,
        now: Callable[[], int] = now_ms,
    ) -> None:
        self.redis = redis
        self.seating = seating
        self.limiter = limiter
        self.max_chars = max_chars
        self.guests_may_chat = guests_may_chat
        self.now = now

    # -- saying ------------------------------------------------------------------------------

    async def send(
        self,
        player: str,
        request: gateway_pb2.SendChatRequest,
    ) -> gateway_pb2.ChatMessage:
        """Store and publish one message, or refuse it (typed, nothing stored)."""
        table_id = forwarded_bounds.table_id(request.table_id)
        if request.channel not in (TABLE, KIBITZ):
            raise InvalidArgument("CHAT_CHANNEL", "channel is TABLE or KIBITZ", field="channel")
        text = clean_text(request.text, self.max_chars)
        if is_guest(player) and not self.guests_may_chat:
            raise PermissionDenied("CHAT_GUESTS", "sign in with an account to chat")
        silenced_ms = int(await self.redis.pttl(_silenced_key(player)))
        if silenced_ms > 0:
            raise PermissionDenied(
                "CHAT_SILENCED",
                "an operator has kept you from chatting for a while",
                retry_after_ms=str(silenced_ms),
            )
        # The lobby's NOT_FOUND for a table it does not know.
        seats = await self.seating(table_id, player, False)
        seated = player in seats.player_ids
        if request.channel == TABLE and not seated:
            raise PermissionDenied("CHAT_NOT_SEATED", "table chat is for the table's players")
        if request.channel == KIBITZ and seated:
            raise PermissionDenied(
                "CHAT_KIBITZ_PLAYERS", "kibitz is for spectators; players read it after the match"
            )
        if request.channel == KIBITZ and not seats.watchable:
            raise PermissionDenied("NOT_WATCHABLE", "this table is not open to spectators")
        wait_ms = self.limiter.take(player)
        if wait_ms:
            raise rate_limited(self.limiter, wait_ms, "chat messages per second per player")
        sent = self.now()
        message = gateway_pb2.ChatMessage(
            message_id=f"{sent:013d}-{secrets.token_hex(4)}",
            table_id=table_id,
            match_id=seats.match_id,
            channel=request.channel,
            sender_id=player,
            text=text,
            sent_ms=sent,
        )
        data = message.SerializeToString()
        pipe = self.redis.pipeline(transaction=True)
        pipe.xadd(chat_key(table_id), {"m": data}, maxlen=MAX_KEPT, approximate=True)
        pipe.expire(chat_key(table_id), CHAT_KEEP_S)
        pipe.publish(chat_channel(table_id), data)
        await pipe.execute()
        return message

    # -- reading -----------------------------------------------------------------------------

    async def history(self, player: str, table_id: str) -> list[gateway_pb2.ChatMessage]:
        table_id = forwarded_bounds.table_id(table_id)
        seats = await self.seating(table_id, player, True)
        seated = player in seats.player_ids
        if not seated and not seats.watchable:
            raise PermissionDenied("NOT_WATCHABLE", "this table is not open to spectators")
        pipe = self.redis.pipeline(transaction=False)
        pipe.smembers(_mutes_key(player))
        pipe.smembers(blocks_key(player))
        pipe.smembers(_removed_key(table_id))
        muted_raw, blocked_raw, removed_raw = await pipe.execute()
        muted, removed = _texts(muted_raw) | _texts(blocked_raw), _texts(removed_raw)
        return [
            m
            for m in await self._messages(table_id)
            if m.sender_id not in muted
            and m.message_id not in removed
            and _readable(m, seated, seats)
        ]

    async def _messages(self, table_id: str) -> list[gateway_pb2.ChatMessage]:
        """The table's kept messages, oldest first."""
        out = []
        for _id, fields in await self.redis.xrange(chat_key(table_id)):
            message = gateway_pb2.ChatMessage()
            message.ParseFromString(fields[b"m"])
            out.append(message)
        return out

    # -- reports (the operators act on them: services/identity/chat_moderation.py) ------------

    async def report(self, player: str, request: gateway_pb2.ReportChatRequest) -> str:
        """Queue a report of a message the reporter may read, with the messages of its channel
        before it; one report per reporter and message."""
        table_id = forwarded_bounds.table_id(request.table_id)
        reason = forwarded_bounds.reason(request.reason)
        seats = await self.seating(table_id, player, True)
        seated = player in seats.player_ids
        messages = await self._messages(table_id)
        at = next((i for i, m in enumerate(messages) if m.message_id == request.message_id), -1)
        if at < 0 or not _readable(messages[at], seated, seats):
            raise NotFound("UNKNOWN_MESSAGE", "no such message that you may read (kept a day)")
        reported = messages[at]
        before = [m for m in messages[:at] if m.channel == reported.channel][-CONTEXT:]
        once = chat_reported_key(reported.message_id, player)
        report = admin_pb2.ChatReport(
            reporter_id=player,
            reason=reason,
            message=reported,
            context=before,
            reported_ms=self.now(),
        )
        if not await self.redis.set(once, "", nx=True, ex=CHAT_KEEP_S):
            return reply_text(await self.redis.get(once + ":id") or b"")
        report_id = reply_text(
            await self.redis.xadd(
                REPORTS, {"r": report.SerializeToString()}, maxlen=MAX_REPORTS, approximate=True
            )
        )
        await self.redis.set(once + ":id", report_id, ex=CHAT_KEEP_S)
        return report_id

    async def mute(self, player: str, other: str, muted: bool) -> list[str]:
        other = forwarded_bounds.bounded(other, "player_id", 64)
        if not other:
            raise InvalidArgument("MISSING", "name the player to mute", field="player_id")
        if other == player:
            raise InvalidArgument("CHAT_MUTE_SELF", "you cannot mute yourself", field="player_id")
        key = _mutes_key(player)
        if muted:
            if await self.redis.scard(key) >= MAX_MUTED and not await self.redis.sismember(
                key, other
            ):
                raise ServiceError("CHAT_MUTES_FULL", f"at most {MAX_MUTED} muted players")
            await self.redis.sadd(key, other)
        else:
            await self.redis.srem(key, other)
        return sorted(_texts(await self.redis.smembers(key)))

    async def hidden_from(self, sender: str, readers: list[str]) -> list[str]:
        """Of a message's live readers, those who muted or blocked its sender (the gateways'
        delivery leaves them out)."""
        wanted = sorted(set(readers))
        if not wanted:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for reader in wanted:
            pipe.sismember(_mutes_key(reader), sender)
            pipe.sismember(blocks_key(reader), sender)
        found = await pipe.execute()
        return [r for i, r in enumerate(wanted) if found[2 * i] or found[2 * i + 1]]
