"""Signing in: guests, devices, email, refresh, the bots' service login; the edge's part of it.

An account's session (and what comes with a first login: the starter grant) is the identity
service's (services/identity/); the gateway checks its limits and the ban list, and signs the
access token. The bots worker signs in only as a computer seat that some table has: its
credential cannot act for a person, and it never holds the token-signing key."""

from __future__ import annotations

import hashlib
import hmac
import logging

from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from services.common.errors import PermissionDenied, ServiceError
from services.common.tokens import Identity, TokenSigner
from services.contracts.seats import computer_name, computer_table
from services.gateway.callers import Callers
from services.gateway.names import Names
from services.gateway.ports import AccountsPort, IdentityProvider, LobbyPort, Session

log = logging.getLogger("bg.gateway")


class SignIn:
    def __init__(
        self,
        callers: Callers,
        identities: IdentityProvider,
        names: Names,
        lobby: LobbyPort,
        accounts: AccountsPort | None = None,
        access_ttl_s: int = 900,
        bots_secret: str = "",
    ) -> None:
        self.callers = callers
        self.signer: TokenSigner = callers.signer
        self.identities = identities
        self.names = names
        self.lobby = lobby
        self.accounts = accounts
        self.access_ttl_s = access_ttl_s  # accounts' tokens; guests' live signer.ttl_s
        self.bots_secret = bots_secret

    async def login(self, request: gateway_pb2.LoginRequest) -> gateway_pb2.LoginResponse:
        rates = self.callers.rates
        if request.device_id:
            device = hashlib.sha256(request.device_id.encode()).hexdigest()[:24]
            rates.check_login(f"device:{device}")
            session = await self._accounts().device_login(
                request.device_id, request.display_name, exact=request.exact_name
            )
            return await self._logged_in(session)
        if request.email:
            rates.check_login("email:" + request.email.strip().casefold())
            session = await self._accounts().email_login(request.email, request.password)
            return await self._logged_in(session)
        identity = await self.identities.guest(request.guest_name)
        token, expires = self.signer.issue(identity)
        await self.names.remember(identity.player_id, identity.name)
        return gateway_pb2.LoginResponse(
            token=token,
            player_id=identity.player_id,
            expires_ms=expires,
            display_name=identity.name,
        )

    async def service_login(
        self, request: gateway_pb2.ServiceLoginRequest, credential: str
    ) -> gateway_pb2.LoginResponse:
        if not self.bots_secret or not hmac.compare_digest(credential, self.bots_secret):
            raise PermissionDenied("SERVICE_ONLY", "a service credential is needed")
        seat = request.player_id
        table_id = computer_table(seat)
        if table_id is None:
            raise PermissionDenied(
                "CPU_SEATS_ONLY", "a service signs in only as a computer seat", field="player_id"
            )
        table = matchmaking_pb2.TableRequest(player_id=seat, table_id=table_id)
        lobby = await self.lobby.get_table(table)
        if seat not in lobby.player_ids:
            raise PermissionDenied(
                "NOT_A_SEAT", "no table has this computer seat", field="player_id"
            )
        name = computer_name(seat)
        token, expires = self.signer.issue(Identity(seat, name))
        return gateway_pb2.LoginResponse(
            token=token, player_id=seat, expires_ms=expires, display_name=name
        )

    async def refresh(self, refresh_token: str) -> gateway_pb2.LoginResponse:
        return await self._logged_in(await self._accounts().refresh(refresh_token))

    async def logout(self, refresh_token: str) -> None:
        await self._accounts().logout(refresh_token)

    async def delete_account(self, player: str) -> None:
        """The identity service closes the wallet's side first, then the account's; the name
        the directory kept for it goes too (the identity service answers "deleted player")."""
        await self._accounts().delete(player)
        await self.names.forget(player)

    async def link_email(self, player: str, email: str, password: str) -> None:
        await self._accounts().link_email(player, email, password)

    async def set_name(self, player: str, name: str) -> gateway_pb2.LoginResponse:
        identity = await self._accounts().set_name(player, name)
        await self.names.remember(player, identity.name)
        token, expires = self.signer.issue(identity, ttl_s=self.access_ttl_s)
        return gateway_pb2.LoginResponse(
            token=token, player_id=player, expires_ms=expires, display_name=identity.name
        )

    def _accounts(self) -> AccountsPort:
        if self.accounts is None:
            raise ServiceError("NO_ACCOUNTS", "this gateway has no accounts (guests only)")
        return self.accounts

    async def _logged_in(self, session: Session) -> gateway_pb2.LoginResponse:
        self.callers.refuse_banned(session.identity.player_id)
        # The directory keeps an account's name while it signs in and renews (every refresh):
        # others' lookups (a friends view every BG_FRIENDS_REFRESH_S) need not ask identity.
        await self.names.remember(session.identity.player_id, session.identity.name)
        # Issued as of the session's making: a refresh retried within its race window gets the
        # very same pair, access token included.
        issued = session.issued_ms / 1000 if session.issued_ms else None
        token, expires = self.signer.issue(session.identity, now=issued, ttl_s=self.access_ttl_s)
        return gateway_pb2.LoginResponse(
            token=token,
            player_id=session.identity.player_id,
            expires_ms=expires,
            refresh_token=session.refresh_token,
            refresh_expires_ms=session.refresh_expires_ms,
            display_name=session.identity.name,
            email=session.email,
            restricted=session.restricted,
        )
