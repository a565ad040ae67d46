"""Players' display names through the gateway's directory, on Valkey and a Valkey Cluster."""

from __future__ import annotations

import pytest

from services.common.errors import InvalidArgument
from services.gateway.names import MAX_LOOKUP, Names
from tests.helpers import Valkey


async def test_names_of_people_and_computer_seats(valkey: Valkey) -> None:
    redis = valkey.client()
    try:
        names = Names(redis, ttl_s=60)
        await names.remember("gaaa", "ann")
        await names.remember("gbbb", "bob")
        found = await names.lookup(["gaaa", "gbbb", "cpu-easy-t1", "gnobody"])
        assert found == {"gaaa": "ann", "gbbb": "bob", "cpu-easy-t1": "CPU (easy)"}
        assert 0 < await redis.ttl("player:name:{gaaa}") <= 60  # lapses with the login
    finally:
        await redis.aclose()


async def test_too_many_at_once_is_refused(valkey: Valkey) -> None:
    redis = valkey.client()
    try:
        with pytest.raises(InvalidArgument) as err:
            await Names(redis, ttl_s=60).lookup([f"g{i}" for i in range(MAX_LOOKUP + 1)])
        assert err.value.code == "TOO_MANY"
    finally:
        await redis.aclose()
