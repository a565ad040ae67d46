"""Rate limits shared by gateway replicas through Redis (issue 14 req. 3), on a single Valkey
and on a Valkey Cluster: a player's calls count together whichever gateway takes them; a
gateway decides without a round trip and overshoots by at most its local cap per sync."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from services.common.errors import ServiceError
from services.gateway.rate_limits import RateLimits, SharedLimiter, peer_address

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def test_peer_address_counts_a_clients_connections_together() -> None:
    assert peer_address("ipv4:10.0.0.7:53311") == "10.0.0.7"
    assert peer_address("ipv6:[::1]:50000") == "::1"
    assert peer_address("unix:/tmp/s") == "unix:/tmp/s"
    assert peer_address("") == "local"


async def test_two_gateways_share_a_players_limit(redis: Any) -> None:
    clock = Clock()
    gateways = [SharedLimiter(redis, f"t{uuid.uuid4().hex[:6]}", 20, now=clock) for _ in "ab"]
    kind = gateways[0].kind
    for g in gateways:
        g.kind = kind  # the same limit, as two replicas of one gateway have it
    allowed = 0
    for _ in range(10):  # ten sync intervals of one second: the player alternates gateways
        for g in gateways:
            allowed += sum(g.allow("alice") for _ in range(5))
        for g in gateways:
            await g.sync()
        clock.t += 0.1
    # The player's 20 per second, not 20 per gateway: at most one gateway's local cap over.
    assert 20 <= allowed <= 20 + gateways[0].local_cap
    assert not any(g.allow("alice") for g in gateways)
    assert all(g.allow("bob") for g in gateways)  # others are not held back
    clock.t += 1.0  # the next window: allowed again
    assert gateways[0].allow("alice")


async def test_between_syncs_a_gateway_lets_through_only_its_local_cap(redis: Any) -> None:
    clock = Clock()
    limiter = SharedLimiter(redis, f"t{uuid.uuid4().hex[:6]}", 50, sync_s=0.1, now=clock)
    assert limiter.local_cap == 10
    assert sum(limiter.allow("alice") for _ in range(30)) == 10
    await limiter.sync()
    assert sum(limiter.allow("alice") for _ in range(30)) == 10  # 20 of 50 used


async def test_limits_refuse_with_a_typed_error(redis: Any) -> None:
    limits = RateLimits(redis, per_player_s=2, per_peer_s=3)
    limits.check_player("carol")
    limits.check_player("carol")
    with pytest.raises(ServiceError) as err:
        limits.check_player("carol")
    assert err.value.code == "RATE_LIMITED"
    for _ in range(2):
        limits.check_peer("10.0.0.9")
    with pytest.raises(ServiceError):
        limits.check_peer("10.0.0.9")


async def test_logins_per_device_or_email_are_limited(redis: Any) -> None:
    limits = RateLimits(redis, per_player_s=50, per_peer_s=50, per_login_s=2)
    for _ in range(2):
        limits.check_login("email:fay@example.com")
    with pytest.raises(ServiceError) as err:
        limits.check_login("email:fay@example.com")
    assert err.value.code == "RATE_LIMITED"
    limits.check_login("email:gus@example.com")  # each account has its own
