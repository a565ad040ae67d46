"""The gateway's rate limits, held across its replicas (services/common/shared_rate_limits.py): per
player (from the token), per peer address and per login name. A player's calls and Play
commands draw from one bucket, whichever gateway and stream they come by."""

from __future__ import annotations

import asyncio
from typing import Any

from services.common.shared_rate_limits import SharedLimiter, check
from services.contracts.redis_keys import rate_limit_key


def limiter(
    redis: Any, kind: str, per_s: float, sync_s: float = 0.1, burst: float | None = None
) -> SharedLimiter:
    """A shared limiter of the gateway's (its counters under services/contracts' rate keys)."""
    return SharedLimiter(redis, kind, per_s, sync_s, burst=burst, key_of=rate_limit_key)


class RateLimits:
    """The gateway's limits: per player (every authenticated call and Play command, from one
    bucket), per peer address (every call, Login included) and per login name (a device or an
    email: guessing passwords or device ids from many addresses), all shared with the other
    gateways."""

    def __init__(
        self,
        redis: Any,
        per_player_s: float,
        per_peer_s: float,
        sync_s: float = 0.1,
        per_login_s: float = 5.0,
        player_burst: float | None = None,
    ) -> None:
        self.players = limiter(redis, "player", per_player_s, sync_s, burst=player_burst)
        self.peers = limiter(redis, "peer", per_peer_s, sync_s)
        self.logins = limiter(redis, "login", per_login_s, sync_s)

    def check_player(self, player_id: str) -> None:
        check(self.players, player_id, "calls and commands per second per player")

    def check_peer(self, address: str) -> None:
        check(self.peers, address, "calls per second from one address")

    def check_login(self, who: str) -> None:
        """`who`: "device:<hash>" or "email:<address>" (never a secret in a Redis key)."""
        check(self.logins, who, "logins per second for one account")

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(self.players.run(stop), self.peers.run(stop), self.logins.run(stop))
