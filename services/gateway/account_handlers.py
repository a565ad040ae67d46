"""The account's handlers: signing in and out, the account (its email, its name, its deletion),
the player's own balance, names and privacy."""

from __future__ import annotations

from collections.abc import Awaitable

from bg.gateway.v1 import gateway_pb2
from services.common.errors import ServiceError
from services.gateway.callers import Caller, Callers
from services.gateway.metrics import GatewayMetrics
from services.gateway.names import DisplayNames
from services.gateway.ports import BalancesPort
from services.gateway.privacy import Privacy
from services.gateway.sign_in import SignIn


class AccountHandlers:
    UNARY = (
        "Login",
        "ServiceLogin",
        "Refresh",
        "Logout",
        "DeleteAccount",
        "LinkEmail",
        "SetDisplayName",
        "GetBalance",
        "GetNames",
        "SetPrivacy",
    )

    def __init__(
        self,
        callers: Callers,
        sign_in: SignIn,
        balances: BalancesPort,
        names: DisplayNames,
        privacy: Privacy,
        metrics: GatewayMetrics,
    ) -> None:
        self.callers = callers
        self.sign_in = sign_in
        self.balances = balances
        self.names = names
        self.privacy = privacy
        self.metrics = metrics

    async def Login(
        self, request: gateway_pb2.LoginRequest, caller: Caller
    ) -> gateway_pb2.LoginResponse:
        self.callers.peer(caller, request)
        kind = "device" if request.device_id else "email" if request.email else "guest"
        return await self._signed_in(kind, self.sign_in.login(request))

    async def ServiceLogin(
        self, request: gateway_pb2.ServiceLoginRequest, caller: Caller
    ) -> gateway_pb2.LoginResponse:
        self.callers.peer(caller, request)
        signed_in = self.sign_in.service_login(request, caller.service_credential)
        return await self._signed_in("service", signed_in)

    async def Refresh(
        self, request: gateway_pb2.RefreshRequest, caller: Caller
    ) -> gateway_pb2.LoginResponse:
        self.callers.peer(caller, request)
        return await self._signed_in("refresh", self.sign_in.refresh(request.refresh_token))

    async def _signed_in(
        self, kind: str, signing_in: Awaitable[gateway_pb2.LoginResponse]
    ) -> gateway_pb2.LoginResponse:
        try:
            answer = await signing_in
        except ServiceError as err:
            self.metrics.logins.labels(kind, err.code).inc()
            raise
        self.metrics.logins.labels(kind, "ok").inc()
        return answer

    async def Logout(
        self, request: gateway_pb2.LogoutRequest, caller: Caller
    ) -> gateway_pb2.LogoutResponse:
        self.callers.peer(caller, request)
        await self.sign_in.logout(request.refresh_token)
        return gateway_pb2.LogoutResponse()

    async def DeleteAccount(
        self, request: gateway_pb2.DeleteAccountRequest, caller: Caller
    ) -> gateway_pb2.DeleteAccountResponse:
        await self.sign_in.delete_account(self.callers.player(caller, request))
        return gateway_pb2.DeleteAccountResponse()

    async def LinkEmail(
        self, request: gateway_pb2.LinkEmailRequest, caller: Caller
    ) -> gateway_pb2.LinkEmailResponse:
        player = self.callers.player(caller, request)
        await self.sign_in.link_email(player, request.email, request.password)
        return gateway_pb2.LinkEmailResponse()

    async def SetDisplayName(
        self, request: gateway_pb2.SetDisplayNameRequest, caller: Caller
    ) -> gateway_pb2.LoginResponse:
        player = self.callers.player(caller, request)
        return await self.sign_in.set_name(player, request.display_name)

    async def GetBalance(
        self, request: gateway_pb2.BalanceRequest, caller: Caller
    ) -> gateway_pb2.BalanceResponse:
        player = self.callers.player(caller, request)
        return gateway_pb2.BalanceResponse(balance=await self.balances.balance(player))

    async def GetNames(
        self, request: gateway_pb2.NamesRequest, caller: Caller
    ) -> gateway_pb2.NamesResponse:
        self.callers.player(caller, request)
        return gateway_pb2.NamesResponse(names=await self.names.lookup(list(request.player_ids)))

    async def SetPrivacy(
        self, request: gateway_pb2.PrivacyRequest, caller: Caller
    ) -> gateway_pb2.PrivacyResponse:
        player = self.callers.player(caller, request)
        await self.privacy.set(player, request.hide_from_spectators)
        return gateway_pb2.PrivacyResponse()
