"""Where players are, for their followers (services/identity/ports.py PlayerPresence): read from
the presence the gateways record of their live streams (services/gateway/adapters/
redis_presence.py writes it; the layout is services/contracts/redis_keys.py's). Each of a
player's streams is a member "<table>\\0<gateway>\\0<stream>" of `presence:player:{<player>}`;
a stream counts while its gateway's lease in `presence:gateways` is live, so a dead gateway's
players go offline when its lease lapses, before any sweeper closes their streams."""

from __future__ import annotations

from typing import Any

from services.common.connections import reply_text
from services.contracts.redis_keys import PRESENCE_GATEWAYS, presence_player_key


class RedisPlayerPresence:
    def __init__(self, redis: Any) -> None:
        self.redis = redis

    async def tables_of(self, player_ids: list[str], now_ms: int) -> dict[str, set[str]]:
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrangebyscore(PRESENCE_GATEWAYS, now_ms, "+inf")
        for player_id in player_ids:
            pipe.smembers(presence_player_key(player_id))
        live_raw, *found = await pipe.execute()
        live = {reply_text(raw) for raw in live_raw}
        out: dict[str, set[str]] = {}
        for player_id, members in zip(player_ids, found, strict=True):
            for raw in members:
                table_id, gateway, _ = reply_text(raw).split("\0")
                if gateway in live:  # a dead gateway's streams count as gone before the sweep
                    out.setdefault(player_id, set()).add(table_id)
        return out
