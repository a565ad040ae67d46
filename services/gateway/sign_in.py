"""Signing in and the account: guests, devices, email, refresh, the bots' service login.

A new account's starter diamonds are granted at its first login (best effort: the next login
asks again). The bots worker signs in only as a computer seat that some table has: its
credential cannot act for a person, and it never holds the token-signing key."""

from __future__ import annotations

import hashlib
import hmac
import logging

from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import NotFound, PermissionDenied, ServiceError, remote_call
from services.common.tokens import Identity, TokenSigner
from services.contracts.seats import ACCOUNT_PREFIX, computer_name, computer_table
from services.gateway.callers import Callers
from services.gateway.names import Names
from services.gateway.ports import AccountsPort, IdentityProvider, Session

log = logging.getLogger("bg.gateway")


class SignIn:
    def __init__(
        self,
        callers: Callers,
        identities: IdentityProvider,
        names: Names,
        wallet: wallet_pb2_grpc.WalletServiceAsyncStub,
        lobby: matchmaking_pb2_grpc.MatchmakingServiceAsyncStub,
        accounts: AccountsPort | None = None,
        access_ttl_s: int = 900,
        bots_secret: str = "",
    ) -> None:
        self.callers = callers
        self.signer: TokenSigner = callers.signer
        self.identities = identities
        self.names = names
        self.wallet = wallet
        self.lobby = lobby
        self.accounts = accounts
        self.access_ttl_s = access_ttl_s  # accounts' tokens; guests' live signer.ttl_s
        self.bots_secret = bots_secret

    async def login(self, request: gateway_pb2.LoginRequest) -> gateway_pb2.LoginResponse:
        rates = self.callers.rates
        if request.device_id:
            device = hashlib.sha256(request.device_id.encode()).hexdigest()[:24]
            rates.check_login(f"device:{device}")
            session = await self._accounts().device_login(request.device_id, request.display_name)
            return await self._first_login(session)
        if request.email:
            rates.check_login("email:" + request.email.strip().casefold())
            session = await self._accounts().email_login(request.email, request.password)
            return await self._first_login(session)
        identity = await self.identities.guest(request.guest_name)
        token, expires = self.signer.issue(identity)
        await self.names.remember(identity.player_id, identity.name)
        return gateway_pb2.LoginResponse(
            token=token, player_id=identity.player_id, expires_ms=expires,
            display_name=identity.name,
        )  # fmt: skip

    async def _first_login(self, session: Session) -> gateway_pb2.LoginResponse:
        self.callers.refuse_banned(session.identity.player_id)
        await self._starter_grant(session)
        return self._logged_in(session)

    async def _starter_grant(self, session: Session) -> None:
        """A new account's diamonds (the wallet credits them once per player). Best effort:
        with the wallet down the login still works, and the next login asks again."""
        if session.granted or self.accounts is None:
            return
        player = session.identity.player_id
        try:
            await remote_call(
                self.wallet.GrantStarter(
                    wallet_pb2.GrantStarterRequest(player_id=player), timeout=5
                )
            )
            await self.accounts.granted(player)
        except Exception as exc:
            log.warning("starter grant postponed", extra={"error": repr(exc)[:200]})

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
        lobby = await remote_call(self.lobby.GetTable(table, timeout=10))
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
        return self._logged_in(await self._accounts().refresh(refresh_token))

    async def logout(self, refresh_token: str) -> None:
        await self._accounts().logout(refresh_token)

    async def delete_account(self, player: str) -> None:
        """The wallet first: with stakes in play nothing changes; a retry after a failure in
        between finds the wallet's close done (idempotent) and finishes the rest."""
        accounts = self._accounts()
        if not player.startswith(ACCOUNT_PREFIX):
            raise NotFound("NO_ACCOUNT", "guests have no account to delete")
        close = wallet_pb2.CloseAccountRequest(idempotency_key=f"close:{player}", player_id=player)
        await remote_call(self.wallet.CloseAccount(close, timeout=10))
        await accounts.delete(player)

    async def link_email(self, player: str, email: str, password: str) -> None:
        await self._accounts().link_email(player, email, password)

    async def set_name(self, player: str, name: str) -> gateway_pb2.LoginResponse:
        identity = await self._accounts().set_name(player, name)
        token, expires = self.signer.issue(identity, ttl_s=self.access_ttl_s)
        return gateway_pb2.LoginResponse(
            token=token, player_id=player, expires_ms=expires, display_name=identity.name
        )

    def _accounts(self) -> AccountsPort:
        if self.accounts is None:
            raise ServiceError("NO_ACCOUNTS", "this gateway has no accounts (guests only)")
        return self.accounts

    def _logged_in(self, session: Session) -> gateway_pb2.LoginResponse:
        self.callers.refuse_banned(session.identity.player_id)
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
        )
