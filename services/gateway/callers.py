"""Who is calling: the verified token's player, within the rate limits over every gateway.

A transport tells who calls as a `Caller` (the gRPC servicer from the call's metadata, the
WebSocket from its connection and the token it sent); the handlers take that, never a
transport's context. The player id always comes from the verified token, never from a
request, so a player can act only for themselves (and the table service checks the seat
belongs to them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from services.common.errors import PermissionDenied, Unauthenticated
from services.common.shared_rate_limits import peer_address
from services.common.tokens import TokenSigner
from services.gateway import edge_bounds
from services.gateway.bans import Bans
from services.gateway.rate_limits import RateLimits

Context = grpc.aio.ServicerContext[Any, Any]


@dataclass(frozen=True)
class Caller:
    """Who calls, as any transport tells it: the peer (gRPC's form, `ipv4:1.2.3.4:5678`: its
    address is what the flood guard counts), the bearer token, a service's credential
    (ServiceLogin only), and the transport's name (for the metrics only)."""

    peer: str
    token: str | None = None  # None: no bearer token sent at all
    service_credential: str = ""
    transport: str = "grpc"


def caller_of(context: Context) -> Caller:
    """The Caller of a gRPC call: its peer and its `authorization: Bearer` and
    `x-service-credential` metadata."""
    metadata = dict(context.invocation_metadata() or ())
    header = str(metadata.get("authorization", ""))
    token = header.removeprefix("Bearer ") if header.startswith("Bearer ") else None
    credential = str(metadata.get("x-service-credential", ""))
    return Caller(context.peer(), token, credential)


class Callers:
    def __init__(self, signer: TokenSigner, rates: RateLimits, bans: Bans | None = None) -> None:
        self.signer = signer
        self.rates = rates
        self.bans = bans

    def peer(self, caller: Caller, request: Message | None = None) -> None:
        """The caller's address, over every gateway (a flood guard: many players may share one
        address behind a NAT or proxy, so its limit is far above a player's); `request`'s
        strings bounded."""
        self.rates.check_peer(peer_address(caller.peer))
        if request is not None:
            edge_bounds.check(request)

    def player(self, caller: Caller, request: Message | None = None) -> str:
        """The caller's player id from the verified token, within the player's rate limit over
        every gateway; `request`'s strings bounded."""
        self.peer(caller, request)
        if caller.token is None:
            raise Unauthenticated("NO_TOKEN", "send authorization: Bearer <token>")
        player_id = self.signer.verify(caller.token).player_id
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
