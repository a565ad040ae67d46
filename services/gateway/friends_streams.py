"""The Friends streams this gateway holds, and the friends calls made through it. Friends'
state and rules are the identity service's (services/identity/friends.py); here is what is
live: a Friends stream holds its player's online presence (under this gateway's lease,
services/gateway/presence.py) and sends the player's view whenever it changes, at once for a
change made through this gateway (its streams are woken), within BG_FRIENDS_REFRESH_S for one
made through another."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import uuid
from collections.abc import Awaitable, Callable

from bg.gateway.v1 import gateway_pb2
from services.contracts.redis_keys import PRESENCE_LOBBY as LOBBY
from services.gateway.ports import SocialPort
from services.gateway.presence import Presence


class FriendsStreams:
    def __init__(self, social: SocialPort, presence: Presence, refresh_s: float) -> None:
        self.social = social
        self.presence = presence
        self.refresh_s = refresh_s
        self._wakes: dict[str, set[asyncio.Event]] = {}  # this gateway's Friends streams

    # -- changes made through this gateway: the players' streams here see them at once --------

    async def follow(
        self, player: str, request: gateway_pb2.FollowRequest
    ) -> gateway_pb2.FriendsView:
        try:
            return await self.social.follow(player, request)
        finally:
            self._wake(player)

    async def block(
        self, player: str, request: gateway_pb2.BlockRequest
    ) -> gateway_pb2.FriendsView:
        try:
            return await self.social.block(player, request)
        finally:
            self._wake(player, request.player_id)

    async def challenge(
        self, player: str, request: gateway_pb2.ChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer:
        if not request.request_id:  # a retry on another replica then finds the first's table
            request.request_id = f"gw-{uuid.uuid4().hex}"
        try:
            return await self.social.challenge(player, request)
        finally:
            self._wake(player, request.player_id)

    async def answer(
        self, player: str, request: gateway_pb2.AnswerChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer:
        try:
            answer = await self.social.answer(player, request)
        except BaseException:
            self._wake(player)  # a lapsed or gone challenge changed the answerer's view too
            raise
        self._wake(player, answer.challenge.from_id)
        return answer

    # -- the Friends stream ------------------------------------------------------------------

    async def stream(
        self,
        player: str,
        write: Callable[[gateway_pb2.FriendsView], Awaitable[None]],
        allowed: Callable[[], None] = lambda: None,
        refresh_s: float | None = None,
    ) -> None:
        """Hold the player's online presence and send their view whenever it changes: at once
        for what this gateway did, within `refresh_s` (BG_FRIENDS_REFRESH_S unless given) for
        what others did."""
        refresh_s = self.refresh_s if refresh_s is None else refresh_s
        stream = secrets.token_hex(8)
        wake = asyncio.Event()
        self._wakes.setdefault(player, set()).add(wake)
        try:
            await self.presence.opened(LOBBY, player, stream)
            last: gateway_pb2.FriendsView | None = None
            while True:
                allowed()  # a ban ends the stream (raises)
                view = await self.social.view(player)
                if view != last:
                    await write(view)
                    last = view
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), refresh_s)
        finally:
            here = self._wakes.get(player)
            if here is not None:
                here.discard(wake)
                if not here:
                    del self._wakes[player]
            await asyncio.shield(self.presence.closed(LOBBY, player, stream))

    def _wake(self, *players: str) -> None:
        for player in players:
            for wake in self._wakes.get(player, ()):
                wake.set()
