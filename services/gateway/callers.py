"""Who is calling: the verified token's player, within the rate limits over every gateway.

The player id always comes from the verified token, never from a request, so a player can act
only for themselves (and the table service checks the seat belongs to them)."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf.message import Message

from services.common.errors import PermissionDenied, Unauthenticated
from services.gateway import limits
from services.gateway.auth import TokenSigner
from services.gateway.bans import Bans
from services.gateway.rate_limits import RateLimits, peer_address

Context = grpc.aio.ServicerContext[Any, Any]


class Callers:
    def __init__(self, signer: TokenSigner, rates: RateLimits, bans: Bans | None = None) -> None:
        self.signer = signer
        self.rates = rates
        self.bans = bans

    def peer(self, context: Context, request: Message | None = None) -> None:
        """The caller's address, over every gateway (a flood guard: many players may share one
        address behind a NAT or proxy, so its limit is far above a player's); `request`'s
        strings bounded."""
        peer = context.peer() if hasattr(context, "peer") else "local"
        self.rates.check_peer(peer_address(peer))
        if request is not None:
            limits.check(request)

    def player(self, context: Context, request: Message | None = None) -> str:
        """The caller's player id from the verified token, within the player's rate limit over
        every gateway; `request`'s strings bounded."""
        self.peer(context, request)
        metadata = dict(context.invocation_metadata() or ())
        header = str(metadata.get("authorization", ""))
        if not header.startswith("Bearer "):
            raise Unauthenticated("NO_TOKEN", "send authorization: Bearer <token>")
        player_id = self.signer.verify(header.removeprefix("Bearer ")).player_id
        self.acting(player_id)
        return player_id

    def acting(self, player_id: str) -> None:
        """Each act of a signed-in player (a call, a command on a stream): a ban stops a token
        at once, however long it has left; then the player's rate limit."""
        self.refuse_banned(player_id)
        self.rates.check_player(player_id)

    def refuse_banned(self, player_id: str) -> None:
        if self.bans is not None and self.bans.banned(player_id):
            raise PermissionDenied("BANNED", "this player is banned")
