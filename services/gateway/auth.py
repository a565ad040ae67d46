"""Signed, expiring player tokens, and the identity port behind logins.

A token is `base64url(json payload) "." base64url(HMAC-SHA256(secret, payload))`; the payload
holds the player id (`sub`), display name and expiry. Any gateway replica with the shared secret
verifies it without a lookup.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Protocol

from services.common.errors import InvalidArgument, Unauthenticated


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Identity:
    player_id: str
    name: str


class IdentityProvider(Protocol):
    """Where player identities come from (guest logins here; an account system later)."""

    async def guest(self, name: str) -> Identity: ...


class GuestIdentities:
    async def guest(self, name: str) -> Identity:
        name = name.strip()
        if not 1 <= len(name) <= 32 or not name.isprintable():
            raise InvalidArgument(
                "INVALID_NAME", "a guest name is 1..32 printable characters", field="guest_name"
            )
        return Identity("g" + secrets.token_hex(8), name)


class TokenSigner:
    def __init__(self, secret: str, ttl_s: int) -> None:
        if len(secret) < 16:
            raise ValueError("the token secret must be at least 16 characters")
        self.key = secret.encode()
        self.ttl_s = ttl_s

    def issue(self, identity: Identity, now: float | None = None) -> tuple[str, int]:
        expires = int(((now or time.time()) + self.ttl_s) * 1000)
        payload = json.dumps(
            {"sub": identity.player_id, "name": identity.name, "exp": expires}
        ).encode()
        body = _b64(payload)
        return f"{body}.{self._sign(body)}", expires

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self.key, body.encode(), hashlib.sha256).digest())

    def verify(self, token: str, now: float | None = None) -> Identity:
        try:
            body, signature = token.split(".")
        except ValueError:
            raise Unauthenticated("BAD_TOKEN", "malformed token") from None
        if not hmac.compare_digest(signature, self._sign(body)):
            raise Unauthenticated("BAD_TOKEN", "token signature does not match")
        payload = json.loads(_unb64(body))
        if payload["exp"] < (now or time.time()) * 1000:
            raise Unauthenticated("TOKEN_EXPIRED", "the token has expired; log in again")
        return Identity(payload["sub"], payload["name"])
