"""Players' display names through the gateway's directory, on Valkey and a Valkey Cluster."""

from __future__ import annotations

import pytest

from services.common.errors import InvalidArgument
from services.gateway.names import MAX_LOOKUP, DisplayNames, Names
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


async def test_an_account_seen_lately_is_named_without_asking_identity(valkey: Valkey) -> None:
    """Sign-ins and renewals keep an account's name in the directory (services/gateway/
    sign_in.py): a friends view, every BG_FRIENDS_REFRESH_S, asks the identity service only for
    accounts not seen lately; a deleted account's name is forgotten, so identity answers it."""

    class Identity:
        def __init__(self) -> None:
            self.asked: list[list[str]] = []

        async def names(self, player_ids: list[str]) -> dict[str, str]:
            self.asked.append(player_ids)
            return {p: "deleted player" for p in player_ids}

    redis = valkey.client()
    try:
        names, identity = Names(redis, ttl_s=60), Identity()
        display = DisplayNames(names, identity)
        await names.remember("pann0001", "ann")
        found = await display.lookup(["pann0001", "pbob0002", "gguest"])
        assert found == {"pann0001": "ann", "pbob0002": "deleted player"}
        assert identity.asked == [["pbob0002"]]  # ann's from the directory; a guest never asked
        await names.forget("pann0001")
        assert await display.lookup(["pann0001"]) == {"pann0001": "deleted player"}
        await names.forget("pnobody")  # nothing to forget: no harm
    finally:
        await redis.aclose()
