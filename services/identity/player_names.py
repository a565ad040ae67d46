"""Display names as a friends view shows them: from the names directory the gateways keep in
Redis from players' sign-ins (services/contracts/redis_keys.name_key; read here, never
written), an account's not seen there lately from this service's accounts, a computer seat's by
its level. A name not known (a guest's lapsed with its login) is left out: clients show the
id. (A view every BG_FRIENDS_REFRESH_S per open Friends stream: the directory spares the
accounts' database most of them.)"""

from __future__ import annotations

from typing import Any

from services.common.connections import reply_text
from services.contracts.redis_keys import name_key
from services.contracts.seats import ACCOUNT_PREFIX, computer_name, is_computer
from services.identity.ports import AccountsRepository


class PlayerNames:
    def __init__(self, redis: Any, accounts: AccountsRepository) -> None:
        self.redis = redis
        self.accounts = accounts

    async def lookup(self, wanted: list[str]) -> dict[str, str]:
        names = {p: computer_name(p) for p in wanted if is_computer(p)}
        people = sorted({p for p in wanted if p} - set(names))
        if people:
            async with self.redis.pipeline(transaction=False) as pipe:
                for player_id in people:
                    pipe.get(name_key(player_id))
                found = await pipe.execute()
            for player_id, raw in zip(people, found, strict=True):
                if raw is not None:
                    names[player_id] = reply_text(raw)
        members = [p for p in people if p.startswith(ACCOUNT_PREFIX) and p not in names]
        if members:
            names.update(await self.accounts.names(members))
        return names
