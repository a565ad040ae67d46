"""Player accounts in SQL, the identity service's AccountsRepository: device login (a device id
the app keeps secret maps to the same player every time), email and password (argon2id, with a
lockout after repeated failures), unique display names changed at most once a day, and
refresh tokens (stored hashed; each use rotates the token; a token used twice, past a few
seconds' grace for races, revokes its whole family, so a stolen refresh token dies the moment
either holder uses it again).

The identity replicas share the database; they hold no state of their own. Migrations run at
start (migrations/, under an advisory lock on PostgreSQL).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import Row, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from services.common.errors import (
    Conflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
    Unauthenticated,
)
from services.contracts.bounds import (
    NAME_MAX,
    NAME_MIN,
    NAME_RESERVED,
    PASSWORD_MAX,
    PASSWORD_MIN,
)
from services.contracts.seats import ACCOUNT_PREFIX
from services.identity.ports import Account, AccountRecord, Session
from services.identity.schema import bans, devices, players, refresh_tokens, restrictions

DEVICE_ID = re.compile(r"[A-Za-z0-9_-]{32,128}")
# NAME_MIN..NAME_MAX letters or digits, with a space, _ or - inside
NAME = re.compile(rf"[^\W_][\w -]{{{NAME_MIN - 2},{NAME_MAX - 2}}}[^\W_]")
EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,189}\.[^@\s]{2,63}")
RESERVED = NAME_RESERVED
# A refresh token used again this soon after its first use is a race (two tabs, a retried call),
# not theft: it gets a session too. Later, a second use ends the session.
REUSE_GRACE_MS = 10_000


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def successor_of(key: bytes, token: str) -> str:
    """The refresh token that replaces `token`: HMAC-SHA256 under the identity service's key, so
    a retry gets the very same one and nobody without the key can compute it from a copied
    token."""
    mac = hmac.new(key, b"bg-refresh-successor\x00" + token.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def successor_keys(secrets_: Iterable[str]) -> list[bytes]:
    """The refresh successors' keys, one per secret of BG_REFRESH_KEYS (the first derives, all
    are checked), kept apart from the secrets themselves by a label."""
    return [hashlib.sha256(b"bg-refresh-successor-key:" + k.encode()).digest() for k in secrets_]


def valid_name(name: str) -> str:
    """A display name: NAME_MIN..NAME_MAX letters or digits (space, _ and - inside), not
    starting with a reserved word."""
    name = " ".join(name.split())
    if not NAME.fullmatch(name) or name.casefold().startswith(RESERVED):
        raise InvalidArgument(
            "INVALID_NAME",
            f"a name is {NAME_MIN}..{NAME_MAX} letters or digits (space, _ or - inside), not "
            f"starting with {'/'.join(RESERVED)}",
            field="display_name",
        )
    return name


class Accounts:
    def __init__(
        self,
        engine: AsyncEngine,
        refresh_ttl_s: int = 30 * 86_400,
        name_change_s: int = 86_400,
        lockout_after: int = 5,
        lockout_s: int = 900,
        clock: Callable[[], float] = time.time,
        successor_keys: Sequence[bytes] = (),
    ) -> None:
        self.engine = engine
        # Identity replicas must share these (app.py derives them from BG_REFRESH_KEYS); one
        # alone may use a random key.
        self.successor_keys = list(successor_keys) or [secrets.token_bytes(32)]
        self.refresh_ttl_s = refresh_ttl_s
        self.name_change_s = name_change_s
        self.lockout_after = lockout_after
        self.lockout_s = lockout_s
        self.clock = clock
        # argon2id with the library's defaults (RFC 9106's second recommended profile).
        self.hasher = PasswordHasher()
        self._dummy = ""  # a hash to verify against when the email is unknown (same timing)

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    # -- logins ------------------------------------------------------------------------------

    async def device_login(self, device_id: str, name: str, exact: bool = False) -> Session:
        """The device's player (created on its first login, named `name` or, unless `exact`,
        a variant of it when taken: with `exact` a taken name is refused, nothing created),
        with a new session."""
        if not DEVICE_ID.fullmatch(device_id):
            raise InvalidArgument(
                "INVALID_DEVICE", "a device id is 32..128 of A-Z a-z 0-9 _ -", field="device_id"
            )
        device = _digest(device_id)
        for _ in range(3):  # a first login racing another on the same device: read it again
            async with self.engine.begin() as conn:
                row = (
                    await conn.execute(
                        select(
                            players.c.player_id,
                            players.c.display_name,
                            players.c.deleted_ms,
                            players.c.granted_ms,
                        )
                        .join(devices, devices.c.player_id == players.c.player_id)
                        .where(devices.c.device_hash == device)
                    )
                ).first()
                if row is not None:
                    if row.deleted_ms is not None:
                        raise Unauthenticated("ACCOUNT_DELETED", "this account was deleted")
                    identity = Account(row.player_id, row.display_name)
                    return await self._session(conn, identity, granted=row.granted_ms is not None)
            try:
                async with self.engine.begin() as conn:
                    identity = await self._create(conn, valid_name(name), exact)
                    await conn.execute(
                        devices.insert().values(
                            device_hash=device,
                            player_id=identity.player_id,
                            created_ms=self._now_ms(),
                        )
                    )
                    return await self._session(conn, identity, granted=False)
            except IntegrityError:
                continue
        raise ServiceError("TRY_AGAIN", "the device is logging in elsewhere; try again")

    async def email_login(self, email: str, password: str) -> Session:
        """Email and password; after `lockout_after` failures in a row the account is locked for
        `lockout_s` (every attempt meanwhile is refused, right password or not)."""
        email = email.strip().casefold()
        now = self._now_ms()
        async with self.engine.begin() as conn:
            row = (
                await conn.execute(
                    select(players).where(players.c.email == email, players.c.deleted_ms.is_(None))
                )
            ).first()
            if row is None or row.password_hash is None:
                self._burn(password)  # the same time whether the email exists or not
                raise Unauthenticated("BAD_CREDENTIALS", "wrong email or password")
            if row.locked_until_ms > now:
                raise Unauthenticated(
                    "LOCKED",
                    "too many failed logins; try again later",
                    retry_after_s=str((row.locked_until_ms - now + 999) // 1000),
                )
            try:
                self.hasher.verify(row.password_hash, password)
            except (VerificationError, InvalidHashError):
                failed = row.failed_logins + 1
                values: dict[str, int] = {"failed_logins": failed}
                if failed >= self.lockout_after:
                    values = {"failed_logins": 0, "locked_until_ms": now + self.lockout_s * 1000}
                await conn.execute(
                    update(players).where(players.c.player_id == row.player_id).values(**values)
                )
                failure = Unauthenticated("BAD_CREDENTIALS", "wrong email or password")
            else:
                await conn.execute(
                    update(players)
                    .where(players.c.player_id == row.player_id)
                    .values(failed_logins=0)
                )
                identity = Account(row.player_id, row.display_name)
                return await self._session(conn, identity, granted=row.granted_ms is not None)
        raise failure

    def _burn(self, password: str) -> None:
        self._dummy = self._dummy or self.hasher.hash(secrets.token_hex(16))
        with contextlib.suppress(VerificationError, InvalidHashError):
            self.hasher.verify(self._dummy, password)

    async def link_email(self, player_id: str, email: str, password: str) -> None:
        """Give an account (a device's, say) an email and password to log in with elsewhere."""
        email = email.strip().casefold()
        if not EMAIL.fullmatch(email):
            raise InvalidArgument("INVALID_EMAIL", "not an email address", field="email")
        if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
            raise InvalidArgument(
                "WEAK_PASSWORD",
                f"a password is {PASSWORD_MIN}..{PASSWORD_MAX} characters",
                field="password",
            )
        digest = self.hasher.hash(password)
        try:
            async with self.engine.begin() as conn:
                done = await conn.execute(
                    update(players)
                    .where(players.c.player_id == player_id, players.c.deleted_ms.is_(None))
                    .values(email=email, password_hash=digest)
                )
        except IntegrityError:
            raise Conflict("EMAIL_TAKEN", "another account has this email", field="email") from None
        if done.rowcount != 1:
            raise NotFound("NO_ACCOUNT", "guests have no account to link; log in with a device")

    async def granted(self, player_id: str) -> None:
        """The player's starter grant was credited (the wallet's grant is once per player)."""
        async with self.engine.begin() as conn:
            await conn.execute(
                update(players)
                .where(players.c.player_id == player_id, players.c.granted_ms.is_(None))
                .values(granted_ms=self._now_ms())
            )

    async def delete(self, player_id: str) -> None:
        """The account's personal data goes (name, email, password, devices), its sessions end;
        the id stays, for the ledger and the histories that name it. Idempotent."""
        now = self._now_ms()
        async with self.engine.begin() as conn:
            found = await conn.execute(
                update(players)
                .where(players.c.player_id == player_id)
                .values(
                    display_name="deleted player",
                    name_key=None,
                    email=None,
                    password_hash=None,
                    deleted_ms=func.coalesce(players.c.deleted_ms, now),
                )
            )
            if found.rowcount != 1:
                raise NotFound("NO_ACCOUNT", "guests have no account to delete")
            await conn.execute(devices.delete().where(devices.c.player_id == player_id))
            await conn.execute(
                update(refresh_tokens)
                .where(
                    refresh_tokens.c.player_id == player_id, refresh_tokens.c.revoked_ms.is_(None)
                )
                .values(revoked_ms=now)
            )

    # -- names -------------------------------------------------------------------------------

    async def set_name(self, player_id: str, name: str) -> Account:
        name = valid_name(name)
        now = self._now_ms()
        try:
            async with self.engine.begin() as conn:
                row = (
                    await conn.execute(
                        select(players.c.name_changed_ms).where(
                            players.c.player_id == player_id, players.c.deleted_ms.is_(None)
                        )
                    )
                ).first()
                if row is None:
                    raise NotFound("NO_ACCOUNT", "guests have no account to rename")
                if now < row.name_changed_ms + self.name_change_s * 1000:
                    raise PermissionDenied(
                        "NAME_CHANGE_TOO_SOON",
                        "a name changes at most once a day",
                        field="display_name",
                    )
                await conn.execute(
                    update(players)
                    .where(players.c.player_id == player_id)
                    .values(display_name=name, name_key=name.casefold(), name_changed_ms=now)
                )
        except IntegrityError:
            raise Conflict(
                "NAME_TAKEN", "another player has this name", field="display_name"
            ) from None
        return Account(player_id, name)

    async def names(self, player_ids: list[str]) -> dict[str, str]:
        if not player_ids:
            return {}
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                select(players.c.player_id, players.c.display_name).where(
                    players.c.player_id.in_(player_ids)
                )
            )
            return {r.player_id: r.display_name for r in rows}

    async def _create(self, conn: AsyncConnection, name: str, exact: bool = False) -> Account:
        """A new player named `name`, or `name` and a number when it is taken (unless `exact`:
        then a taken name is NAME_TAKEN, for the player to choose another)."""
        now = self._now_ms()
        base = name[:15]
        for attempt in range(1 if exact else 8):
            candidate = name if attempt == 0 else f"{base}-{secrets.randbelow(10_000):04d}"
            taken = await conn.scalar(
                select(func.count()).where(players.c.name_key == candidate.casefold())
            )
            if taken:
                continue
            player_id = ACCOUNT_PREFIX + secrets.token_hex(8)
            await conn.execute(
                players.insert().values(
                    player_id=player_id,
                    display_name=candidate,
                    name_key=candidate.casefold(),
                    created_ms=now,
                )
            )
            return Account(player_id, candidate)
        if exact:
            raise Conflict(
                "NAME_TAKEN",
                f"another player has the name {name}: choose another",
                field="display_name",
            )
        raise Conflict("NAME_TAKEN", "choose another name", field="display_name")

    # -- sessions ----------------------------------------------------------------------------

    async def _session(
        self,
        conn: AsyncConnection,
        identity: Account,
        family: str | None = None,
        granted: bool = True,
        token: str | None = None,
        now: int | None = None,
    ) -> Session:
        token = token or secrets.token_urlsafe(32)
        now = self._now_ms() if now is None else now
        expires = now + self.refresh_ttl_s * 1000
        await conn.execute(
            refresh_tokens.insert().values(
                token_hash=_digest(token),
                family=family or secrets.token_hex(16),
                player_id=identity.player_id,
                expires_ms=expires,
            )
        )
        email, restricted = await self._standing(conn, identity.player_id)
        return Session(
            identity, token, expires, granted, issued_ms=now, email=email, restricted=restricted
        )

    @staticmethod
    async def _standing(conn: AsyncConnection, player_id: str) -> tuple[str, bool]:
        """The email the account signs in with ("": none saved) and whether an operator
        restricted it: the player's own to see, said with each session."""
        row = (
            await conn.execute(
                select(players.c.email, restrictions.c.player_id.label("held"))
                .outerjoin(restrictions, restrictions.c.player_id == players.c.player_id)
                .where(players.c.player_id == player_id)
            )
        ).first()  # one read a login: the email and the restriction together
        return (str(row.email or ""), row.held is not None) if row is not None else ("", False)

    async def _refresh_row(self, conn: AsyncConnection, token: str) -> Row[Any] | None:
        return (
            await conn.execute(
                select(refresh_tokens, players.c.display_name, players.c.deleted_ms)
                .join(players, players.c.player_id == refresh_tokens.c.player_id)
                .where(refresh_tokens.c.token_hash == _digest(token))
            )
        ).first()

    async def refresh(self, token: str) -> Session:
        """A new session for a refresh token, which is used up (rotation). Used again within
        REUSE_GRACE_MS (a retry after a lost answer, two tabs renewing at once) it answers the
        same new session as the first time, never a second one; later, a second use ends the
        session family (the token was copied)."""
        now = self._now_ms()
        async with self.engine.begin() as conn:
            row = await self._refresh_row(conn, token)
            if row is None:
                raise Unauthenticated("BAD_REFRESH", "unknown refresh token; log in again")
            if row.revoked_ms is not None or row.deleted_ms is not None:
                raise Unauthenticated("REFRESH_REVOKED", "this session has ended; log in again")
            if row.expires_ms <= now:
                raise Unauthenticated("REFRESH_EXPIRED", "this session has expired; log in again")
            identity = Account(row.player_id, row.display_name)
            if row.used_ms is None:
                successor = successor_of(self.successor_keys[0], token)
                used = await conn.execute(
                    update(refresh_tokens)
                    .where(
                        refresh_tokens.c.token_hash == row.token_hash,
                        refresh_tokens.c.used_ms.is_(None),
                    )
                    .values(used_ms=now, successor_hash=_digest(successor))
                )
                if used.rowcount == 1:
                    # Issued as of the use (used_ms): a retry answers this very pair, access
                    # token included, however late in its second the first call ran.
                    return await self._session(conn, identity, row.family, token=successor, now=now)
                row = await self._refresh_row(conn, token)  # a racing call used it just now
                assert row is not None and row.used_ms is not None
            if now - row.used_ms <= REUSE_GRACE_MS:
                again = await self._successor(conn, row, token, identity)
                if again is not None:
                    return again
        # Used before: a copy is in someone else's hands. End the whole session family.
        await self._revoke_family(row.family)
        raise Unauthenticated("REFRESH_REUSED", "this refresh token was already used; log in again")

    async def _successor(
        self, conn: AsyncConnection, row: Row[Any], token: str, identity: Account
    ) -> Session | None:
        """The session the first use of `token` answered: its new token is derived from the
        used one under a key of the identity service's (any key still held, so a key rotation within
        the window changes nothing), checked against the stored hash."""
        for key in self.successor_keys:
            candidate = successor_of(key, token)
            if _digest(candidate) != row.successor_hash:
                continue
            made = (
                await conn.execute(
                    select(refresh_tokens).where(refresh_tokens.c.token_hash == row.successor_hash)
                )
            ).first()
            if made is None:
                return None
            if made.revoked_ms is not None:
                raise Unauthenticated("REFRESH_REVOKED", "this session has ended; log in again")
            email, restricted = await self._standing(conn, identity.player_id)
            return Session(
                identity,
                candidate,
                made.expires_ms,
                issued_ms=row.used_ms,
                email=email,
                restricted=restricted,
            )
        return None

    async def logout(self, token: str) -> None:
        """End the session the refresh token belongs to (idempotent; unknown tokens too)."""
        async with self.engine.connect() as conn:
            family = await conn.scalar(
                select(refresh_tokens.c.family).where(refresh_tokens.c.token_hash == _digest(token))
            )
        if family is not None:
            await self._revoke_family(family)

    async def _revoke_family(self, family: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                update(refresh_tokens)
                .where(refresh_tokens.c.family == family, refresh_tokens.c.revoked_ms.is_(None))
                .values(revoked_ms=self._now_ms())
            )

    # -- operators ---------------------------------------------------------------------------

    async def ban(self, player_id: str, operator: str, reason: str) -> None:
        """Record the ban (kept once; a second ban keeps the first's time) and end every session
        of the player: their refresh tokens are revoked."""
        now = self._now_ms()
        async with self.engine.begin() as conn:
            exists = await conn.scalar(
                select(bans.c.player_id).where(bans.c.player_id == player_id)
            )
            if exists is None:
                await conn.execute(
                    bans.insert().values(
                        player_id=player_id, banned_ms=now, operator=operator, reason=reason
                    )
                )
            await conn.execute(
                update(refresh_tokens)
                .where(
                    refresh_tokens.c.player_id == player_id, refresh_tokens.c.revoked_ms.is_(None)
                )
                .values(revoked_ms=now)
            )

    async def unban(self, player_id: str) -> bool:
        """Lift the ban; whether there was one."""
        async with self.engine.begin() as conn:
            gone = await conn.execute(bans.delete().where(bans.c.player_id == player_id))
        return bool(gone.rowcount)

    async def is_banned(self, player_id: str) -> bool:
        async with self.engine.connect() as conn:
            found = await conn.scalar(select(bans.c.player_id).where(bans.c.player_id == player_id))
        return found is not None

    async def banned_ids(self) -> list[str]:
        async with self.engine.connect() as conn:
            return [str(r) for r in (await conn.scalars(select(bans.c.player_id))).all()]

    async def restrict(self, player_id: str, operator: str, reason: str) -> bool:
        """Record a restriction to casual unrated play (kept once: a second keeps the first's
        time and reason); whether it is new."""
        async with self.engine.begin() as conn:
            exists = await conn.scalar(
                select(restrictions.c.player_id).where(restrictions.c.player_id == player_id)
            )
            if exists is not None:
                return False
            await conn.execute(
                restrictions.insert().values(
                    player_id=player_id,
                    restricted_ms=self._now_ms(),
                    operator=operator,
                    reason=reason,
                )
            )
        return True

    async def unrestrict(self, player_id: str) -> bool:
        """Lift the restriction; whether there was one."""
        async with self.engine.begin() as conn:
            gone = await conn.execute(
                restrictions.delete().where(restrictions.c.player_id == player_id)
            )
        return bool(gone.rowcount)

    async def restricted_ids(self) -> list[str]:
        async with self.engine.connect() as conn:
            found = await conn.scalars(select(restrictions.c.player_id))
            return [str(r) for r in found.all()]

    async def record(self, player_id: str) -> AccountRecord:
        """What operators see of an account: name, kind (guest/device/email), creation, deletion,
        ban. A player id with no account is a guest."""
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(select(players).where(players.c.player_id == player_id))
            ).first()
            device = await conn.scalar(
                select(devices.c.player_id).where(devices.c.player_id == player_id).limit(1)
            )
            ban = (await conn.execute(select(bans).where(bans.c.player_id == player_id))).first()
            held = (
                await conn.execute(
                    select(restrictions).where(restrictions.c.player_id == player_id)
                )
            ).first()
        out: AccountRecord = {
            "display_name": "",
            "kind": "guest",
            "created_ms": 0,
            "deleted": False,
            "banned": ban is not None,
            "ban_reason": ban.reason if ban is not None else "",
            "restricted": held is not None,
            "restriction_reason": held.reason if held else "",
        }
        if row is not None:
            out["display_name"] = row.display_name
            out["kind"] = "email" if row.email else ("device" if device else "account")
            out["created_ms"] = row.created_ms
            out["deleted"] = row.deleted_ms is not None
        return out
