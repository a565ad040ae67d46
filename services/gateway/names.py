"""Players' display names, for the other side of the board.

A guest's name is known only from its login; the gateway keeps it in Redis for as long as the
login's token lives (one key per player, so the keys spread over a Valkey Cluster's slots), and
any gateway answers for any player. An account's is kept so too from its sign-ins and renewals
(and its renaming), so a lookup asks the identity service only for accounts not seen lately.
Computer seats are named by their level. A guest's name that has lapsed reads as empty: clients
fall back to the id.
"""

from __future__ import annotations

import logging
from typing import Any

from services.common.connections import reply_text
from services.common.errors import InvalidArgument
from services.contracts.redis_keys import name_key
from services.contracts.seats import ACCOUNT_PREFIX, computer_name, is_computer
from services.gateway.ports import AccountNames

log = logging.getLogger("bg.gateway.names")
MAX_LOOKUP = 16


class Names:
    def __init__(self, redis: Any, ttl_s: int) -> None:
        self.redis = redis
        self.ttl_s = ttl_s

    async def remember(self, player_id: str, name: str) -> None:
        """Best effort: a login must not fail because the directory is unreachable."""
        try:
            await self.redis.set(name_key(player_id), name, ex=self.ttl_s)
        except Exception as exc:
            log.warning("cannot remember a player's name", extra={"error": repr(exc)[:200]})

    async def forget(self, player_id: str) -> None:
        """Best effort, as `remember`: a lookup then asks the accounts."""
        try:
            await self.redis.delete(name_key(player_id))
        except Exception as exc:
            log.warning("cannot forget a player's name", extra={"error": repr(exc)[:200]})

    async def lookup(self, player_ids: list[str]) -> dict[str, str]:
        if len(player_ids) > MAX_LOOKUP:
            raise InvalidArgument(
                "TOO_MANY", f"at most {MAX_LOOKUP} players at a time", field="player_ids"
            )
        names = {p: computer_name(p) for p in player_ids if is_computer(p)}
        people = sorted({p for p in player_ids if p and p not in names})
        if people:
            async with self.redis.pipeline(transaction=False) as pipe:
                for player_id in people:
                    pipe.get(name_key(player_id))
                found = await pipe.execute()
            for player_id, raw in zip(people, found, strict=True):
                if raw is not None:
                    names[player_id] = reply_text(raw)
        return names


class DisplayNames:
    """Everyone's display name: guests' and computer seats' from the directory, accounts' from
    the identity service."""

    def __init__(self, names: Names, accounts: AccountNames | None) -> None:
        self.names = names
        self.accounts = accounts

    async def lookup(self, wanted: list[str]) -> dict[str, str]:
        found = await self.names.lookup(wanted)  # Redis down: UNAVAILABLE
        members = [p for p in wanted if p.startswith(ACCOUNT_PREFIX) and p not in found]
        if members and self.accounts is not None:
            found.update(await self.accounts.names(members))
        return found
