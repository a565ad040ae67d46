"""Friends (issue 29): follows, blocks, presence of the players you follow, and challenges.

- A follow is one-way (`friends:follows:<player>`, at most BG_FRIENDS_MAX). Following shows where
  a player is: offline, online (a Friends stream open), waiting at a table or playing, with the
  table when anyone may watch it (I-35, the players' privacy applied).
- Presence is read from what the gateways already hold: every Play stream and every Friends
  stream is recorded under its gateway's lease (services/gateway/presence.py; read here by
  services/identity/adapters/redis_presence.py), so a gateway that dies takes its players'
  presence with it when its lease lapses, not when someone notices.
- A block (`friends:blocks:<player>`) ends the follows both ways and the challenges between the
  two, refuses the blocked player's follows and challenges, and hides their chat words from the
  blocker (services/identity/chat.py reads it beside the mutes).
- A challenge opens a private table for the challenger (CreateTable with its code) and invites
  the other player; accepting seats them there (JoinByCode, retry-safe under the challenge's
  id), declining closes the table (the challenger's stake hold goes back). Its answer is claimed
  once, by one script on the challenge's hash, so two answers can never both win.
- The gateway that served a change sends its Friends streams' new views at once; the others
  see it at their next look (services/gateway/friends_streams.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from services.common.clock import now_ms
from services.common.connections import evalsha, reply_text
from services.common.errors import InvalidArgument, NotFound, PermissionDenied, ServiceError
from services.contracts.redis_keys import PRESENCE_LOBBY, blocks_key, follows_key
from services.contracts.redis_keys import challenge_key as _challenge_key
from services.contracts.redis_keys import challenges_received_key as _received_key
from services.contracts.redis_keys import challenges_sent_key as _sent_key
from services.identity import forwarded_bounds
from services.identity.ports import FriendsLobby, PlayerPresence

OFFLINE = gateway_pb2.FRIEND_STATUS_OFFLINE
ONLINE = gateway_pb2.FRIEND_STATUS_ONLINE
WAITING = gateway_pb2.FRIEND_STATUS_WAITING
PLAYING = gateway_pb2.FRIEND_STATUS_PLAYING
MAX_BLOCKED = 500
MAX_SENT = 5  # pending challenges one player may have out
MAX_RECEIVED = 20  # pending challenges one player may be sent
TABLE_CACHE_S = 2.0  # a table's lobby status, shared by every follower's view on this replica
PENDING, ACCEPTING, ACCEPTED, DECLINED = "pending", "accepting", "accepted", "declined"

# KEYS: the challenge's hash. ARGV: the answering player, the new status, now ms.
# Claims the answer: pending -> accepting|declined; an accept retried (after a crash, or
# after it was answered) finds accepting or accepted and changes nothing. Returns the status it
# found ("" when there is no such challenge to this player, "expired" when it lapsed).
_CLAIM = """
local h = redis.call('HMGET', KEYS[1], 'to', 'status', 'expires')
if not h[1] or h[1] ~= ARGV[1] then return '' end
if h[2] == 'pending' and tonumber(h[3]) < tonumber(ARGV[3]) then return 'expired' end
if h[2] == 'pending' then redis.call('HSET', KEYS[1], 'status', ARGV[2]) end
return h[2]
"""


def _texts(raw: Any) -> set[str]:
    return {reply_text(r) for r in raw}


T = TypeVar("T")


class _Recent(Generic[T]):
    """Answers kept TABLE_CACHE_S on this replica, shared by every follower's view (bounded:
    past 10,000 keys the stale ones are forgotten)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[float, T]] = {}

    async def get(self, key: str, load: Callable[[str], Awaitable[T]]) -> T:
        now = asyncio.get_running_loop().time()
        kept = self._kept.get(key)
        if kept is not None and now - kept[0] < TABLE_CACHE_S:
            return kept[1]
        if len(self._kept) > 10_000:
            self._kept = {k: c for k, c in self._kept.items() if now - c[0] < TABLE_CACHE_S}
        value = await load(key)
        self._kept[key] = (now, value)
        return value


Names = Callable[[list[str]], Awaitable[dict[str, str]]]


class Friends:
    def __init__(
        self,
        redis: Any,  # redis-py's async client: untyped
        presence: PlayerPresence,
        lobby: FriendsLobby,
        names: Names,
        max_follows: int,
        challenge_ttl_s: int,
        now: Callable[[], int] = now_ms,
    ) -> None:
        self.redis = redis
        self.presence = presence
        self.lobby = lobby
        self.names = names
        self.max_follows = max_follows
        self.challenge_ttl_s = challenge_ttl_s
        self.now = now
        self._claim = redis.register_script(_CLAIM)
        self._tables: _Recent[matchmaking_pb2.LobbyTable | None] = _Recent()
        self._seats: _Recent[list[matchmaking_pb2.LobbyTable]] = _Recent()
        self._playing: _Recent[bool] = _Recent()

    # -- follows and blocks ------------------------------------------------------------------

    async def follow(self, player: str, other: str, following: bool) -> gateway_pb2.FriendsView:
        other = self._other(player, other, "follow")
        if following:
            if await self._blocked_between(player, other):
                raise PermissionDenied("FRIEND_BLOCKED", "you cannot follow this player")
            if not await self.names([other]):
                raise NotFound("UNKNOWN_PLAYER", "no such player", field="player_id")
            limit = self.max_follows
            full = ServiceError("FOLLOWS_FULL", f"you follow at most {limit} players")
            await self._add_bounded(follows_key(player), other, limit, full)
        else:
            await self.redis.srem(follows_key(player), other)
        return await self.view(player)

    async def block(self, player: str, other: str, blocked: bool) -> gateway_pb2.FriendsView:
        other = self._other(player, other, "block")
        key = blocks_key(player)
        if not blocked:
            await self.redis.srem(key, other)
            return await self.view(player)
        full = ServiceError("BLOCKS_FULL", f"you block at most {MAX_BLOCKED} players")
        await self._add_bounded(key, other, MAX_BLOCKED, full)
        pipe = self.redis.pipeline(transaction=False)
        pipe.srem(follows_key(other), player)
        pipe.srem(follows_key(player), other)
        await pipe.execute()
        for challenge in await self._challenges(_received_key(player)) + await self._challenges(
            _sent_key(player)
        ):
            if challenge.status == PENDING and other in (challenge.from_id, challenge.to_id):
                await self._end(challenge)
        return await self.view(player)

    async def _add_bounded(self, key: str, member: str, limit: int, full: ServiceError) -> None:
        if await self.redis.scard(key) >= limit and not await self.redis.sismember(key, member):
            raise full
        await self.redis.sadd(key, member)

    def _other(self, player: str, other: str, verb: str) -> str:
        other = forwarded_bounds.bounded(other, "player_id")
        if not other:
            raise InvalidArgument("MISSING", f"name the player to {verb}", field="player_id")
        if other == player:
            raise InvalidArgument("FRIEND_SELF", f"you cannot {verb} yourself", field="player_id")
        return other

    async def _blocked_between(self, a: str, b: str) -> bool:
        pipe = self.redis.pipeline(transaction=False)
        pipe.sismember(blocks_key(a), b)
        pipe.sismember(blocks_key(b), a)
        return any(await pipe.execute())

    # -- what a player sees ------------------------------------------------------------------

    async def view(self, player: str) -> gateway_pb2.FriendsView:
        pipe = self.redis.pipeline(transaction=False)
        pipe.smembers(follows_key(player))
        pipe.smembers(blocks_key(player))
        follows_raw, blocked_raw = await pipe.execute()
        followed = sorted(_texts(follows_raw))
        received = await self._challenges(_received_key(player))
        sent = await self._challenges(_sent_key(player))
        wanted = set(followed) | {c.from_id for c in received} | {c.to_id for c in sent}
        names = await self.names(sorted(wanted)) if wanted else {}
        where = await self.presence.tables_of(followed, self.now()) if followed else {}
        friends = []
        for other in followed:
            friend = await self._friend(other, where.get(other, set()))
            friend.display_name = names.get(other, "")
            friends.append(friend)
        friends.sort(key=lambda f: (f.status == OFFLINE, f.display_name.lower(), f.player_id))
        for challenge in received:
            challenge.from_name = names.get(challenge.from_id, "")
        for challenge in sent:
            challenge.to_name = names.get(challenge.to_id, "")
        return gateway_pb2.FriendsView(
            friends=friends, received=received, sent=sent, blocked=sorted(_texts(blocked_raw))
        )

    async def _friend(self, other: str, tables: set[str]) -> gateway_pb2.Friend:
        friend = gateway_pb2.Friend(player_id=other, status=OFFLINE if not tables else ONLINE)
        for table_id in sorted(tables - {PRESENCE_LOBBY}):
            table = await self._tables.get(table_id, self.lobby.table)
            if table is None or other not in table.player_ids:
                continue  # the stream outlived the seat (or the lobby forgot the table)
            status = {"dealt": PLAYING, "open": WAITING}.get(table.status)
            if status is None or (friend.status == PLAYING and status == WAITING):
                continue
            if status == PLAYING and not await self._playing.get(table_id, self.lobby.in_play):
                continue  # a finished match's table (an end panel): online, nothing to watch
            friend.status = status
            friend.watchable = table.watchable
            friend.table_id = table_id if table.watchable else ""
        if friend.status == ONLINE:  # no Play stream before the deal: the lobby says if seated
            for table in await self._seats.get(other, self.lobby.seated):
                if table.status == "open":
                    friend.status, friend.watchable = WAITING, table.watchable
                    friend.table_id = table.table_id if table.watchable else ""
                    break
        return friend

    # -- challenges --------------------------------------------------------------------------

    async def challenge(
        self, player: str, request: gateway_pb2.ChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer:
        other = self._other(player, request.player_id, "challenge")
        request_id = forwarded_bounds.bounded(request.request_id, "request_id")
        # Under a request id the challenge's id is the request's, so a retry (of a call whose
        # answer was lost, or that died halfway) finds the first's table and challenge.
        challenge_id = (
            hashlib.sha256(f"{player}\0{request_id}".encode()).hexdigest()[:16]
            if request_id
            else secrets.token_hex(8)
        )
        first = await self._challenge(challenge_id)
        if first is not None:
            table = await self.lobby.table(first.table_id)
            return gateway_pb2.ChallengeAnswer(challenge=first, table=table)
        # A block first: it also ends the follow, and the player is owed the true reason.
        if await self._blocked_between(player, other):
            raise PermissionDenied("FRIEND_BLOCKED", "this player is not taking your challenges")
        if not await self.redis.sismember(follows_key(player), other):
            raise PermissionDenied("CHALLENGE_NOT_FOLLOWED", "follow a player to challenge them")
        if sum(c.status == PENDING for c in await self._challenges(_sent_key(player))) >= MAX_SENT:
            raise ServiceError("CHALLENGES_FULL", f"at most {MAX_SENT} challenges out at once")
        pending = [c for c in await self._challenges(_received_key(other)) if c.status == PENDING]
        if len(pending) >= MAX_RECEIVED:
            raise ServiceError("CHALLENGES_FULL", "this player has too many challenges waiting")
        table = await self.lobby.create(player, request.options, f"challenge:{challenge_id}")
        sent = self.now()
        expires = sent + self.challenge_ttl_s * 1000
        keep_s = self.challenge_ttl_s + 3600  # an answered challenge stays readable a while
        pipe = self.redis.pipeline(transaction=False)
        key = _challenge_key(challenge_id)
        pipe.hset(
            key,
            mapping={
                "from": player,
                "to": other,
                "table": table.table_id,
                "code": table.code,
                "options": request.options.SerializeToString(),
                "status": PENDING,
                "expires": expires,
            },
        )
        pipe.expire(key, keep_s)
        for index in (_sent_key(player), _received_key(other)):
            pipe.zadd(index, {challenge_id: sent})
            pipe.zremrangebyscore(index, "-inf", sent - keep_s * 1000)
            pipe.expire(index, keep_s)
        await pipe.execute()
        found = await self._challenge(challenge_id)
        assert found is not None
        return gateway_pb2.ChallengeAnswer(challenge=found, table=table)

    async def answer(
        self, player: str, request: gateway_pb2.AnswerChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer:
        challenge_id = forwarded_bounds.bounded(request.challenge_id, "challenge_id")
        if not challenge_id:
            raise InvalidArgument("MISSING", "name the challenge", field="challenge_id")
        wanted = ACCEPTING if request.accept else DECLINED
        key = _challenge_key(challenge_id)
        args = [player, wanted, self.now()]
        was = reply_text(await evalsha(self.redis, self._claim, [key], args))
        if not was:
            raise NotFound("UNKNOWN_CHALLENGE", "no such challenge to you", field="challenge_id")
        if was == "expired":
            raise ServiceError("CHALLENGE_EXPIRED", "this challenge has lapsed")
        if was == DECLINED or (was != PENDING and not request.accept):
            raise ServiceError("CHALLENGE_ANSWERED", f"this challenge was {was} already")
        found = await self._challenge(challenge_id)
        assert found is not None
        if not request.accept:
            await self._end(found, claimed=True)
            found.status = DECLINED
            return gateway_pb2.ChallengeAnswer(challenge=found)
        try:
            code = reply_text(await self.redis.hget(key, "code"))
            table = await self.lobby.join(player, code, f"challenge:{challenge_id}")
        except ServiceError as err:
            if err.code in ("UNKNOWN_CODE", "UNKNOWN_TABLE", "TABLE_NOT_OPEN", "TABLE_FULL"):
                await self.redis.hset(key, "status", DECLINED)  # the challenger left it
                raise ServiceError("CHALLENGE_GONE", "the challenger's table is gone") from err
            if was == PENDING:  # a wager not covered, a match elsewhere: pending, to retry
                await self.redis.hset(key, "status", PENDING)
            raise
        await self.redis.hset(key, "status", ACCEPTED)
        found.status = ACCEPTED
        return gateway_pb2.ChallengeAnswer(challenge=found, table=table)

    async def _end(self, challenge: gateway_pb2.Challenge, claimed: bool = False) -> None:
        """Decline a pending challenge and close its table (the challenger's hold goes back)."""
        key = _challenge_key(challenge.challenge_id)
        if not claimed:
            was = reply_text(
                await evalsha(
                    self.redis, self._claim, [key], [challenge.to_id, DECLINED, self.now()]
                )
            )
            if was != PENDING:
                return
        with contextlib.suppress(ServiceError):  # the challenger left already
            await self.lobby.leave(challenge.from_id, challenge.table_id)

    async def _challenges(self, index: str) -> list[gateway_pb2.Challenge]:
        ids = [reply_text(r) for r in await self.redis.zrevrange(index, 0, 49)]
        found = [await self._challenge(challenge_id) for challenge_id in ids]
        return [c for c in found if c is not None]

    async def _challenge(self, challenge_id: str) -> gateway_pb2.Challenge | None:
        raw = await self.redis.hgetall(_challenge_key(challenge_id))
        if not raw:
            return None
        fields = {reply_text(k): v for k, v in raw.items()}
        challenge = gateway_pb2.Challenge(
            challenge_id=challenge_id,
            from_id=reply_text(fields["from"]),
            to_id=reply_text(fields["to"]),
            table_id=reply_text(fields["table"]),
            status=reply_text(fields["status"]),
            expires_ms=int(reply_text(fields["expires"])),
        )
        challenge.options.ParseFromString(fields["options"])
        if challenge.status == PENDING and challenge.expires_ms < self.now():
            challenge.status = "expired"
        return challenge
