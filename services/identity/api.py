"""The gRPC servicer of bg.identity.v1.IdentityService: accounts and sessions for the gateway
(the operators' AdminService is admin.py). Every refusal is a typed error the gateway hands
on."""

from __future__ import annotations

from typing import Any

import grpc

from bg.identity.v1 import identity_pb2, identity_pb2_grpc
from services.common.errors import InvalidArgument, grpc_errors
from services.identity.ports import Account, AccountsRepository, Session
from services.identity.sign_in import AccountLifecycle

Context = grpc.aio.ServicerContext[Any, Any]
MAX_NAMES = 1000  # player ids a Names call may ask about


def _account(account: Account) -> identity_pb2.Account:
    return identity_pb2.Account(player_id=account.player_id, display_name=account.name)


def _session(session: Session) -> identity_pb2.Session:
    return identity_pb2.Session(
        account=_account(session.account),
        refresh_token=session.refresh_token,
        refresh_expires_ms=session.refresh_expires_ms,
        issued_ms=session.issued_ms,
        email=session.email,
        restricted=session.restricted,
    )


class IdentityServicer(identity_pb2_grpc.IdentityServiceServicer):
    def __init__(self, accounts: AccountsRepository, lifecycle: AccountLifecycle) -> None:
        self.accounts = accounts
        self.lifecycle = lifecycle

    @grpc_errors
    async def DeviceLogin(
        self, request: identity_pb2.DeviceLoginRequest, context: Context
    ) -> identity_pb2.Session:
        session = await self.accounts.device_login(
            request.device_id, request.display_name, exact=request.exact_name
        )
        return _session(await self.lifecycle.signed_in(session))

    @grpc_errors
    async def EmailLogin(
        self, request: identity_pb2.EmailLoginRequest, context: Context
    ) -> identity_pb2.Session:
        session = await self.accounts.email_login(request.email, request.password)
        return _session(await self.lifecycle.signed_in(session))

    @grpc_errors
    async def LinkEmail(
        self, request: identity_pb2.LinkEmailRequest, context: Context
    ) -> identity_pb2.LinkEmailResponse:
        await self.accounts.link_email(request.player_id, request.email, request.password)
        return identity_pb2.LinkEmailResponse()

    @grpc_errors
    async def DeleteAccount(
        self, request: identity_pb2.DeleteAccountRequest, context: Context
    ) -> identity_pb2.DeleteAccountResponse:
        await self.lifecycle.close(request.player_id)
        return identity_pb2.DeleteAccountResponse()

    @grpc_errors
    async def SetName(
        self, request: identity_pb2.SetNameRequest, context: Context
    ) -> identity_pb2.Account:
        return _account(await self.accounts.set_name(request.player_id, request.display_name))

    @grpc_errors
    async def Refresh(
        self, request: identity_pb2.RefreshRequest, context: Context
    ) -> identity_pb2.Session:
        return _session(await self.accounts.refresh(request.refresh_token))

    @grpc_errors
    async def Logout(
        self, request: identity_pb2.LogoutRequest, context: Context
    ) -> identity_pb2.LogoutResponse:
        await self.accounts.logout(request.refresh_token)
        return identity_pb2.LogoutResponse()

    @grpc_errors
    async def Names(
        self, request: identity_pb2.NamesRequest, context: Context
    ) -> identity_pb2.NamesResponse:
        if len(request.player_ids) > MAX_NAMES:
            raise InvalidArgument(
                "TOO_MANY", f"at most {MAX_NAMES} players a call", field="player_ids"
            )
        return identity_pb2.NamesResponse(names=await self.accounts.names(list(request.player_ids)))

    @grpc_errors
    async def ListBanned(
        self, request: identity_pb2.ListBannedRequest, context: Context
    ) -> identity_pb2.ListBannedResponse:
        return identity_pb2.ListBannedResponse(player_ids=await self.accounts.banned_ids())
