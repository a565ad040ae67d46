"""Chat and friends as the gateway asks for them (bg.social.v1.SocialService, served by
social_api.py; the gateway's SocialPort): each call names the player the gateway authenticated
and carries that player's request, and answers in the gateway API's own messages."""

from __future__ import annotations

from bg.gateway.v1 import gateway_pb2
from services.identity.chat import ChatRoom
from services.identity.friends import Friends


class Social:
    def __init__(self, chat: ChatRoom, friends: Friends) -> None:
        self.chat = chat
        self.friends = friends

    async def send_chat(
        self, player: str, request: gateway_pb2.SendChatRequest
    ) -> gateway_pb2.ChatMessage:
        return await self.chat.send(player, request)

    async def chat_history(
        self, player: str, request: gateway_pb2.GetChatRequest
    ) -> gateway_pb2.ChatHistory:
        return gateway_pb2.ChatHistory(messages=await self.chat.history(player, request.table_id))

    async def mute(
        self, player: str, request: gateway_pb2.MuteChatRequest
    ) -> gateway_pb2.MuteChatResponse:
        muted = await self.chat.mute(player, request.player_id, request.muted)
        return gateway_pb2.MuteChatResponse(muted=muted)

    async def report(
        self, player: str, request: gateway_pb2.ReportChatRequest
    ) -> gateway_pb2.ReportChatResponse:
        return gateway_pb2.ReportChatResponse(report_id=await self.chat.report(player, request))

    async def hidden_from(self, sender: str, readers: list[str]) -> list[str]:
        return await self.chat.hidden_from(sender, readers)

    async def follow(
        self, player: str, request: gateway_pb2.FollowRequest
    ) -> gateway_pb2.FriendsView:
        return await self.friends.follow(player, request.player_id, request.following)

    async def block(
        self, player: str, request: gateway_pb2.BlockRequest
    ) -> gateway_pb2.FriendsView:
        return await self.friends.block(player, request.player_id, request.blocked)

    async def view(self, player: str) -> gateway_pb2.FriendsView:
        return await self.friends.view(player)

    async def challenge(
        self, player: str, request: gateway_pb2.ChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer:
        return await self.friends.challenge(player, request)

    async def answer(
        self, player: str, request: gateway_pb2.AnswerChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer:
        return await self.friends.answer(player, request)
