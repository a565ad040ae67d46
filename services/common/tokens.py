"""Signed, expiring tokens (JWTs): players' (the gateway signs and checks them) and operators'
(the identity service's, under a key of its own), each of its own audience.

A token is a JWT (RFC 7519, HS256 through PyJWT) with the standard claims `sub` (the player id),
`iat`, `exp`, `iss` and `aud`, plus the display `name`; its header's `kid` names the key that
signed it. Any replica holding the keys verifies it without a lookup. Keys rotate: add the new
key first (it signs from then on), keep the old one until the tokens it signed have expired
(they still verify), then drop it (they stop at once).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass

import jwt

from services.common.errors import Unauthenticated

ISSUER = "bgcluster"
AUDIENCE = "bg-players"
OPERATORS = "bg-operators"  # operators' tokens: a different audience, so neither passes as other
ALGORITHM = "HS256"
MIN_KEY = 32  # characters: HS256 keys of at least 256 bits (RFC 7518 3.2)


@dataclass(frozen=True)
class Identity:
    player_id: str  # an operator's: "op:<name>"
    name: str
    operator: bool = False


def key_id(secret: str) -> str:
    """A key's id when only one secret is set: the same on every replica, not the key."""
    return "k" + hashlib.sha256(b"bg-token-kid:" + secret.encode()).hexdigest()[:10]


def parse_keys(spec: str) -> dict[str, str]:
    """ "kid=secret,kid=secret" (BG_TOKEN_KEYS): the first signs, all verify."""
    keys: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        kid, sep, secret = part.partition("=")
        if not sep or not kid or not secret:
            raise ValueError("token keys are kid=secret pairs separated by commas")
        keys[kid] = secret
    return keys


class TokenSigner:
    def __init__(self, secret: str, ttl_s: int, keys: Mapping[str, str] | None = None) -> None:
        self.keys = dict(keys) if keys else {key_id(secret): secret}
        if any(len(k) < MIN_KEY for k in self.keys.values()):
            raise ValueError(f"a token key must be at least {MIN_KEY} characters (RFC 7518)")
        self.current = next(iter(self.keys))
        self.ttl_s = ttl_s

    def issue(
        self, identity: Identity, now: float | None = None, ttl_s: int | None = None
    ) -> tuple[str, int]:
        """A token for `identity` and its expiry (unix ms)."""
        issued = int(now if now is not None else time.time())
        expires = issued + (ttl_s or self.ttl_s)
        claims = {
            "sub": identity.player_id,
            "name": identity.name,
            "iat": issued,
            "exp": expires,
            "iss": ISSUER,
            "aud": OPERATORS if identity.operator else AUDIENCE,
        }
        token = jwt.encode(
            claims, self.keys[self.current], algorithm=ALGORITHM, headers={"kid": self.current}
        )
        return token, expires * 1000

    def verify(self, token: str, audience: str = AUDIENCE) -> Identity:
        """The identity a valid token of `audience` names (players', unless operators')."""
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            raise Unauthenticated("BAD_TOKEN", "malformed token") from None
        key = self.keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            raise Unauthenticated("BAD_TOKEN", "the token's key is not (or no longer) in use")
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[ALGORITHM],
                audience=audience,
                issuer=ISSUER,
                options={"require": ["sub", "exp", "iat", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("TOKEN_EXPIRED", "the token has expired; log in again") from None
        except jwt.PyJWTError:
            raise Unauthenticated("BAD_TOKEN", "token signature or claims do not match") from None
        return Identity(str(claims["sub"]), str(claims.get("name", "")), audience == OPERATORS)
