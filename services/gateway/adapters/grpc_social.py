"""The gateway's chat and friends on the identity service (bg.social.v1.SocialService): its
SocialPort over gRPC. A refusal comes back as the service's typed error, which the gateway
hands on to the client as it is."""

from __future__ import annotations

from bg.gateway.v1 import gateway_pb2
from bg.social.v1 import social_pb2 as pb
from bg.social.v1 import social_pb2_grpc
from services.common.errors import remote_call

TIMEOUT_S = 10.0


class GrpcSocial:
    def __init__(self, stub: social_pb2_grpc.SocialServiceAsyncStub) -> None:
        self.stub = stub

    async def send_chat(
        self, player: str, request: gateway_pb2.SendChatRequest
    ) -> gateway_pb2.ChatMessage:
        ask = pb.SendChatCall(player_id=player, request=request)
        return await remote_call(self.stub.SendChat(ask, timeout=TIMEOUT_S))

    async def chat_history(
        self, player: str, request: gateway_pb2.GetChatRequest
    ) -> gateway_pb2.ChatHistory:
        ask = pb.GetChatCall(player_id=player, request=request)
        return await remote_call(self.stub.GetChat(ask, timeout=TIMEOUT_S))

    async def mute(
        self, player: str, request: gateway_pb2.MuteChatRequest
    ) -> gateway_pb2.MuteChatResponse:
        ask = pb.MuteChatCall(player_id=player, request=request)
        return await remote_call(self.stub.MuteChat(ask, timeout=TIMEOUT_S))

    async def report(
        self, player: str, request: gateway_pb2.ReportChatRequest
    ) -> gateway_pb2.ReportChatResponse:
        ask = pb.ReportChatCall(player_id=player, request=request)
        return await remote_call(self.stub.ReportChat(ask, timeout=TIMEOUT_S))

    async def hidden_from(self, sender: str, readers: list[str]) -> list[str]:
        ask = pb.HiddenFromRequest(sender_id=sender, reader_ids=readers)
        return list((await remote_call(self.stub.HiddenFrom(ask, timeout=TIMEOUT_S))).reader_ids)

    async def follow(
        self, player: str, request: gateway_pb2.FollowRequest
    ) -> gateway_pb2.FriendsView:
        ask = pb.FollowCall(player_id=player, request=request)
        return await remote_call(self.stub.Follow(ask, timeout=TIMEOUT_S))

    async def block(
        self, player: str, request: gateway_pb2.BlockRequest
    ) -> gateway_pb2.FriendsView:
        ask = pb.BlockCall(player_id=player, request=request)
        return await remote_call(self.stub.Block(ask, timeout=TIMEOUT_S))

    async def view(self, player: str) -> gateway_pb2.FriendsView:
        ask = pb.GetFriendsCall(player_id=player)
        return await remote_call(self.stub.GetFriends(ask, timeout=TIMEOUT_S))

    async def challenge(
        self, player: str, request: gateway_pb2.ChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer:
        ask = pb.ChallengeCall(player_id=player, request=request)
        return await remote_call(self.stub.Challenge(ask, timeout=TIMEOUT_S))

    async def answer(
        self, player: str, request: gateway_pb2.AnswerChallengeRequest
    ) -> gateway_pb2.ChallengeAnswer:
        ask = pb.AnswerChallengeCall(player_id=player, request=request)
        return await remote_call(self.stub.AnswerChallenge(ask, timeout=TIMEOUT_S))
