"""The social handlers: chat at a table and friends (follows, blocks, challenges, the Friends
stream), on the identity service's social API; what is live is the gateway's own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bg.gateway.v1 import gateway_pb2
from services.gateway.callers import Caller, Callers
from services.gateway.friends_streams import FriendsStreams
from services.gateway.metrics import GatewayMetrics
from services.gateway.ports import SocialPort


class SocialHandlers:
    UNARY = (
        "SendChat",
        "GetChat",
        "MuteChat",
        "ReportChat",
        "Follow",
        "Block",
        "GetFriends",
        "Challenge",
        "AnswerChallenge",
    )

    def __init__(
        self,
        callers: Callers,
        social: SocialPort,
        friends: FriendsStreams,
        metrics: GatewayMetrics,
    ) -> None:
        self.callers = callers
        self.social = social  # chat and friends: the identity service's
        self.friends = friends  # the Friends streams here, woken by changes made through here
        self.metrics = metrics

    async def SendChat(
        self, request: gateway_pb2.SendChatRequest, caller: Caller
    ) -> gateway_pb2.ChatMessage:
        return await self.social.send_chat(self.callers.player(caller, request), request)

    async def GetChat(
        self, request: gateway_pb2.GetChatRequest, caller: Caller
    ) -> gateway_pb2.ChatHistory:
        return await self.social.chat_history(self.callers.player(caller, request), request)

    async def MuteChat(
        self, request: gateway_pb2.MuteChatRequest, caller: Caller
    ) -> gateway_pb2.MuteChatResponse:
        return await self.social.mute(self.callers.player(caller, request), request)

    async def ReportChat(
        self, request: gateway_pb2.ReportChatRequest, caller: Caller
    ) -> gateway_pb2.ReportChatResponse:
        return await self.social.report(self.callers.player(caller, request), request)

    async def Follow(
        self, request: gateway_pb2.FollowRequest, caller: Caller
    ) -> gateway_pb2.FriendsView:
        return await self.friends.follow(self.callers.player(caller, request), request)

    async def Block(
        self, request: gateway_pb2.BlockRequest, caller: Caller
    ) -> gateway_pb2.FriendsView:
        return await self.friends.block(self.callers.player(caller, request), request)

    async def GetFriends(
        self, request: gateway_pb2.GetFriendsRequest, caller: Caller
    ) -> gateway_pb2.FriendsView:
        return await self.social.view(self.callers.player(caller, request))

    async def Challenge(
        self, request: gateway_pb2.ChallengeRequest, caller: Caller
    ) -> gateway_pb2.ChallengeAnswer:
        return await self.friends.challenge(self.callers.player(caller, request), request)

    async def AnswerChallenge(
        self, request: gateway_pb2.AnswerChallengeRequest, caller: Caller
    ) -> gateway_pb2.ChallengeAnswer:
        return await self.friends.answer(self.callers.player(caller, request), request)

    async def Friends(
        self,
        request: gateway_pb2.GetFriendsRequest,
        caller: Caller,
        write: Callable[[gateway_pb2.FriendsView], Awaitable[None]],
    ) -> None:
        player = self.callers.player(caller, request)
        with self.metrics.stream_open("friends", caller.transport):
            await self.friends.stream(player, write, lambda: self.callers.refuse_banned(player))
