"""The gateway's application layer: one handler per method of bg.gateway.v1.GatewayService,
called alike by the gRPC servicer (services/gateway/api.py) and the WebSocket
(services/gateway/ws.py), with no transport in it: each takes the request and the `Caller`
(services/gateway/callers.py: the player id always comes from the verified token, never from
the request), answers or raises a ServiceError; a stream also takes where its messages go.

The handlers are grouped by what they serve, each group on its ports: the account
(account_handlers.py), the lobby (lobby_handlers.py), the table, played or watched
(play_handlers.py), the records (record_handlers.py), chat and friends (social_handlers.py).
`GatewayHandlers` is where the transports find them: each unary method by its name, the three
streams by theirs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from bg.gateway.v1 import gateway_pb2
from services.gateway.account_handlers import AccountHandlers
from services.gateway.callers import Caller
from services.gateway.lobby_handlers import LobbyHandlers
from services.gateway.metrics import GatewayMetrics
from services.gateway.play_handlers import PlayHandlers
from services.gateway.record_handlers import RecordHandlers
from services.gateway.social_handlers import SocialHandlers

Unary = Callable[[Any, Caller], Awaitable[Any]]
GROUPS = (AccountHandlers, LobbyHandlers, PlayHandlers, RecordHandlers, SocialHandlers)
STREAMS = ("Play", "Watch", "Friends")


class GatewayHandlers:
    def __init__(
        self,
        account: AccountHandlers,
        lobby: LobbyHandlers,
        play: PlayHandlers,
        records: RecordHandlers,
        social: SocialHandlers,
        metrics: GatewayMetrics,
    ) -> None:
        self.play = play
        self.social = social
        self.metrics = metrics
        groups = (account, lobby, play, records, social)
        self.unary: dict[str, Unary] = {
            name: getattr(group, name) for group in groups for name in group.UNARY
        }

    async def Play(
        self,
        requests: AsyncIterator[gateway_pb2.PlayRequest],
        caller: Caller,
        write: Callable[[gateway_pb2.PlayUpdate], Awaitable[None]],
    ) -> None:
        await self.play.Play(requests, caller, write)

    async def Watch(
        self,
        request: gateway_pb2.WatchRequest,
        caller: Caller,
        write: Callable[[gateway_pb2.PlayUpdate], Awaitable[None]],
    ) -> None:
        await self.play.Watch(request, caller, write)

    async def Friends(
        self,
        request: gateway_pb2.GetFriendsRequest,
        caller: Caller,
        write: Callable[[gateway_pb2.FriendsView], Awaitable[None]],
    ) -> None:
        await self.social.Friends(request, caller, write)
