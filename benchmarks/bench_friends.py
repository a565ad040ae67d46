"""What a friends view costs (issue 29): the identity service's CPU (friends are its since issue
44; the gateway's part is one gRPC call per view), Valkey's CPU and Redis commands per
FriendsView, by how many players one follows, on a real Valkey; and what that makes of 10,000
open Friends streams refreshing every BG_FRIENDS_REFRESH_S (its default).

2,000 players, each following F others (10, 50, 200, measured side by side in one run); 40% hold a
Friends stream (online), 20% sit at a table (half dealt, half waiting), recorded under two
gateways' leases as services/gateway/presence.py records them. The lobby is an in-memory stand-in
(a dict lookup), so the figures are the friends core's and Redis's, not matchmaking's.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import redis.asyncio as redis_asyncio

from bg.matchmaking.v1 import matchmaking_pb2
from infra.cluster.embedded import start_valkey
from services.contracts.redis_keys import PRESENCE_LOBBY as LOBBY
from services.gateway.adapters.redis_presence import RedisPresenceStore
from services.gateway.presence import Presence
from services.gateway.settings import load_settings
from services.identity.adapters.redis_presence import RedisPlayerPresence
from services.identity.friends import Friends

PLAYERS = 2_000
FOLLOWS = (10, 50, 200)
VIEWS = 300  # views measured per row
STREAMS = 10_000  # the projection's open Friends streams


class Lobby:
    def __init__(self) -> None:
        self.tables: dict[str, matchmaking_pb2.LobbyTable] = {}

    async def create(self, *_: Any) -> matchmaking_pb2.LobbyTable:
        raise AssertionError("the bench makes no challenge")

    join = create

    async def leave(self, *_: Any) -> None:
        raise AssertionError("the bench makes no challenge")

    async def table(self, table_id: str) -> matchmaking_pb2.LobbyTable | None:
        return self.tables.get(table_id)

    async def seated(self, player_id: str) -> list[matchmaking_pb2.LobbyTable]:
        return [t for t in self.tables.values() if player_id in t.player_ids]

    async def in_play(self, table_id: str) -> bool:
        return True  # every dealt table's match goes on (a view read, cached like the table's)


async def _names(wanted: list[str]) -> dict[str, str]:
    return {p: p.upper() for p in wanted}


async def _server(redis: Any) -> tuple[float, int]:
    """Valkey's CPU seconds so far and the commands it has served."""
    cpu = await redis.info("cpu")
    stats = await redis.info("stats")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]), int(
        stats["total_commands_processed"]
    )


async def _main(url: str) -> None:
    redis = redis_asyncio.Redis.from_url(url)
    rng = random.Random(29)
    players = [f"p{i:05d}" for i in range(PLAYERS)]
    store = RedisPresenceStore(redis)
    lobby = Lobby()
    gateways = [Presence(store, ttl_s=3600) for _ in range(2)]
    for i, player in enumerate(players):
        gateway = gateways[i % 2]
        if i % 10 < 4:
            await gateway.opened(LOBBY, player, f"f{i}")
        elif i % 10 < 6:
            table_id = f"t{i}"
            status = "dealt" if i % 2 else "open"
            lobby.tables[table_id] = matchmaking_pb2.LobbyTable(
                table_id=table_id, status=status, player_ids=[player, ""], watchable=i % 4 == 1
            )
            await gateway.opened(table_id, player, f"s{i}")
    print(f"   {PLAYERS:,} players: 40% online, 20% at a table, on 2 gateways' leases")
    print(
        f"   {'follows':>8} {'views/s':>8} {'identity ms/view':>16} {'valkey ms/view':>15} "
        f"{'redis cmds/view':>16}"
    )
    rows = []
    for follows in FOLLOWS:
        friends = Friends(redis, RedisPlayerPresence(redis), lobby, _names, follows, 300)
        viewers = rng.sample(players, 20)
        for viewer in viewers:
            for other in rng.sample([p for p in players if p != viewer], follows):
                await redis.sadd(f"friends:follows:{viewer}", other)
        await friends.view(viewers[0])  # warm: scripts, the table cache
        cpu0, cmds0 = await _server(redis)
        wall0, own0 = time.perf_counter(), time.process_time()
        for n in range(VIEWS):
            view = await friends.view(viewers[n % len(viewers)])
            assert len(view.friends) == follows
        wall, own = time.perf_counter() - wall0, time.process_time() - own0
        cpu1, cmds1 = await _server(redis)
        per = {
            "follows": follows,
            "views_s": VIEWS / wall,
            "identity_ms": own / VIEWS * 1000,
            "valkey_ms": (cpu1 - cpu0) / VIEWS * 1000,
            "cmds": (cmds1 - cmds0 - 2) / VIEWS,
        }
        rows.append(per)
        print(
            f"   {follows:>8} {per['views_s']:>8.0f} {per['identity_ms']:>16.2f} "
            f"{per['valkey_ms']:>15.3f} {per['cmds']:>16.1f}"
        )
        for viewer in viewers:
            await redis.delete(f"friends:follows:{viewer}")
    base = rows[0]
    for row in rows[1:]:
        ratio = row["identity_ms"] / base["identity_ms"]
        print(
            f"   {row['follows']} follows cost {ratio:.1f}x the "
            f"identity CPU of {base['follows']} ({row['follows'] / base['follows']:.0f}x the "
            "follows)"
        )
    refresh_s = load_settings({}).friends_refresh_s  # BG_FRIENDS_REFRESH_S's default
    rate = STREAMS / refresh_s
    for row in rows:
        cores = rate * row["identity_ms"] / 1000
        print(
            f"   {STREAMS:,} Friends streams of {row['follows']} follows, every "
            f"{refresh_s:.0f} s: {rate:,.0f} views/s = {cores:.1f} identity cores, "
            f"{rate * row['valkey_ms'] / 1000:.2f} Valkey cores, "
            f"{rate * row['cmds']:,.0f} Redis commands/s"
        )
    await redis.aclose()


def run() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-friends-"))
    valkey = start_valkey(workdir / "valkey")
    try:
        asyncio.run(_main(valkey.address))
    finally:
        valkey.stop()


if __name__ == "__main__":
    run()
