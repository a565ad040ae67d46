"""The gRPC servicer of bg.social.v1.SocialService (social.py does the work): the gateway's
player and request in, the answer or a typed refusal out, which the gateway hands on."""

from __future__ import annotations

from typing import Any

import grpc

from bg.gateway.v1 import gateway_pb2
from bg.social.v1 import social_pb2, social_pb2_grpc
from services.common.errors import InvalidArgument, grpc_errors
from services.identity.forwarded_bounds import bounded
from services.identity.social import Social

Context = grpc.aio.ServicerContext[Any, Any]
MAX_READERS = 10_000  # readers one HiddenFrom call may ask about


def _player(player_id: str) -> str:
    """The caller the gateway names (a call without one is the gateway's bug, never a
    player's)."""
    if not player_id:
        raise InvalidArgument("MISSING", "player_id is required", field="player_id")
    return bounded(player_id, "player_id")


class SocialServicer(social_pb2_grpc.SocialServiceServicer):
    def __init__(self, social: Social) -> None:
        self.social = social

    @grpc_errors
    async def SendChat(
        self, request: social_pb2.SendChatCall, context: Context
    ) -> gateway_pb2.ChatMessage:
        return await self.social.send_chat(_player(request.player_id), request.request)

    @grpc_errors
    async def GetChat(
        self, request: social_pb2.GetChatCall, context: Context
    ) -> gateway_pb2.ChatHistory:
        return await self.social.chat_history(_player(request.player_id), request.request)

    @grpc_errors
    async def MuteChat(
        self, request: social_pb2.MuteChatCall, context: Context
    ) -> gateway_pb2.MuteChatResponse:
        return await self.social.mute(_player(request.player_id), request.request)

    @grpc_errors
    async def ReportChat(
        self, request: social_pb2.ReportChatCall, context: Context
    ) -> gateway_pb2.ReportChatResponse:
        return await self.social.report(_player(request.player_id), request.request)

    @grpc_errors
    async def HiddenFrom(
        self, request: social_pb2.HiddenFromRequest, context: Context
    ) -> social_pb2.HiddenFromResponse:
        if len(request.reader_ids) > MAX_READERS:
            raise InvalidArgument(
                "TOO_MANY", f"at most {MAX_READERS} readers at a time", field="reader_ids"
            )
        hidden = await self.social.hidden_from(_player(request.sender_id), list(request.reader_ids))
        return social_pb2.HiddenFromResponse(reader_ids=hidden)

    @grpc_errors
    async def Follow(
        self, request: social_pb2.FollowCall, context: Context
    ) -> gateway_pb2.FriendsView:
        return await self.social.follow(_player(request.player_id), request.request)

    @grpc_errors
    async def Block(
        self, request: social_pb2.BlockCall, context: Context
    ) -> gateway_pb2.FriendsView:
        return await self.social.block(_player(request.player_id), request.request)

    @grpc_errors
    async def GetFriends(
        self, request: social_pb2.GetFriendsCall, context: Context
    ) -> gateway_pb2.FriendsView:
        return await self.social.view(_player(request.player_id))

    @grpc_errors
    async def Challenge(
        self, request: social_pb2.ChallengeCall, context: Context
    ) -> gateway_pb2.ChallengeAnswer:
        return await self.social.challenge(_player(request.player_id), request.request)

    @grpc_errors
    async def AnswerChallenge(
        self, request: social_pb2.AnswerChallengeCall, context: Context
    ) -> gateway_pb2.ChallengeAnswer:
        return await self.social.answer(_player(request.player_id), request.request)
