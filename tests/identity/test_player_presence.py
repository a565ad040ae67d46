"""Issue 29, friends: where a player is, as the identity service reads it
(services/identity/adapters/redis_presence.py) from the presence the gateways write
(services/gateway/adapters/redis_presence.py), on a single Valkey and a Valkey Cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.gateway.adapters.redis_presence import RedisPresenceStore
from services.identity.adapters.redis_presence import RedisPlayerPresence
from tests.helpers import flushed_client

pytestmark = pytest.mark.integration


@pytest.fixture(params=["valkey", "valkey-cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[RedisPresenceStore]:
    client = await flushed_client(request, request.param)
    yield RedisPresenceStore(client)
    await client.aclose()


async def test_where_a_player_is_counts_only_live_gateways_streams(
    store: RedisPresenceStore,
) -> None:
    """Issue 29, friends: the tables each player has a stream to ("" is a Friends stream)."""
    await store.take_lease("g1", 1000)
    await store.take_lease("g2", 2000)
    await store.open_stream("g1", "t1", "ann", "s1")
    await store.open_stream("g2", "", "ann", "s2")
    await store.open_stream("g2", "t2", "bob", "s3")
    await store.open_stream("g2", "t2", "bob", "s4")
    assert await RedisPlayerPresence(store.redis).tables_of(["ann", "bob", "cid"], 500) == {
        "ann": {"t1", ""}, "bob": {"t2"},
    }  # fmt: skip
    # g1's lease lapsed: its streams are gone to followers before any sweeper closes them.
    assert await RedisPlayerPresence(store.redis).tables_of(["ann"], 1500) == {"ann": {""}}
    await store.close_stream("g2", "t2", "bob", "s3")
    assert await RedisPlayerPresence(store.redis).tables_of(["bob"], 1500) == {
        "bob": {"t2"}
    }  # s4 still open
    await store.close_stream("g2", "t2", "bob", "s4")
    await store.close_stream("g2", "", "ann", "s2")
    assert await RedisPlayerPresence(store.redis).tables_of(["ann", "bob"], 1500) == {}
