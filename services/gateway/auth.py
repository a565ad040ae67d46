"""Guest identities (a new player for each guest login); the tokens themselves are
services/common/tokens.py's."""

from __future__ import annotations

import secrets

from services.common.errors import InvalidArgument
from services.common.tokens import Identity
from services.contracts.bounds import GUEST_MAX


class GuestIdentities:
    async def guest(self, name: str) -> Identity:
        name = name.strip()
        if not 1 <= len(name) <= GUEST_MAX or not name.isprintable():
            raise InvalidArgument(
                "INVALID_NAME",
                f"a guest name is 1..{GUEST_MAX} printable characters",
                field="guest_name",
            )
        return Identity("g" + secrets.token_hex(8), name)
