"""The gRPC servicer of bg.identity.v1.IdentityService: accounts, bans and the audit log for the
cluster's own callers (the gateway). Every refusal is a typed error the gateway hands on."""

from __future__ import annotations

import json
from typing import Any

import grpc

from bg.admin.v1 import admin_pb2
from bg.identity.v1 import identity_pb2, identity_pb2_grpc
from services.common.errors import InvalidArgument, grpc_errors
from services.identity.ports import Account, AccountsRepository, AuditRepository, Session

Context = grpc.aio.ServicerContext[Any, Any]
MAX_NAMES = 1000  # player ids a Names call may ask about
MAX_LISTED = 200  # audit entries a listing may ask for


def _account(account: Account) -> identity_pb2.Account:
    return identity_pb2.Account(player_id=account.player_id, display_name=account.name)


def _session(session: Session) -> identity_pb2.Session:
    return identity_pb2.Session(
        account=_account(session.account), refresh_token=session.refresh_token,
        refresh_expires_ms=session.refresh_expires_ms, granted=session.granted,
        issued_ms=session.issued_ms,
    )  # fmt: skip


def _detail(text: str) -> dict[str, object]:
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise InvalidArgument("INVALID_DETAIL", "detail is a JSON object", field="detail")
    return found


class IdentityServicer(identity_pb2_grpc.IdentityServiceServicer):
    def __init__(self, accounts: AccountsRepository, audit: AuditRepository) -> None:
        self.accounts = accounts
        self.audit = audit

    @grpc_errors
    async def DeviceLogin(
        self, request: identity_pb2.DeviceLoginRequest, context: Context
    ) -> identity_pb2.Session:
        return _session(await self.accounts.device_login(request.device_id, request.display_name))

    @grpc_errors
    async def EmailLogin(
        self, request: identity_pb2.EmailLoginRequest, context: Context
    ) -> identity_pb2.Session:
        return _session(await self.accounts.email_login(request.email, request.password))

    @grpc_errors
    async def LinkEmail(
        self, request: identity_pb2.LinkEmailRequest, context: Context
    ) -> identity_pb2.LinkEmailResponse:
        await self.accounts.link_email(request.player_id, request.email, request.password)
        return identity_pb2.LinkEmailResponse()

    @grpc_errors
    async def MarkGranted(
        self, request: identity_pb2.MarkGrantedRequest, context: Context
    ) -> identity_pb2.MarkGrantedResponse:
        await self.accounts.granted(request.player_id)
        return identity_pb2.MarkGrantedResponse()

    @grpc_errors
    async def DeleteAccount(
        self, request: identity_pb2.DeleteAccountRequest, context: Context
    ) -> identity_pb2.DeleteAccountResponse:
        await self.accounts.delete(request.player_id)
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
    async def Ban(
        self, request: identity_pb2.BanRequest, context: Context
    ) -> identity_pb2.BanResponse:
        if not request.player_id:
            raise InvalidArgument("MISSING", "player_id is required", field="player_id")
        await self.accounts.ban(request.player_id, request.operator, request.reason)
        return identity_pb2.BanResponse()

    @grpc_errors
    async def Unban(
        self, request: identity_pb2.UnbanRequest, context: Context
    ) -> identity_pb2.UnbanResponse:
        return identity_pb2.UnbanResponse(was_banned=await self.accounts.unban(request.player_id))

    @grpc_errors
    async def ListBanned(
        self, request: identity_pb2.ListBannedRequest, context: Context
    ) -> identity_pb2.ListBannedResponse:
        return identity_pb2.ListBannedResponse(player_ids=await self.accounts.banned_ids())

    @grpc_errors
    async def GetAccount(
        self, request: identity_pb2.GetAccountRequest, context: Context
    ) -> identity_pb2.AccountRecord:
        return identity_pb2.AccountRecord(**await self.accounts.record(request.player_id))

    @grpc_errors
    async def RecordAudit(
        self, request: identity_pb2.RecordAuditRequest, context: Context
    ) -> identity_pb2.RecordAuditResponse:
        entry = await self.audit.record(
            request.operator, request.action, request.target, request.reason, request.outcome,
            _detail(request.detail),
        )  # fmt: skip
        return identity_pb2.RecordAuditResponse(id=entry)

    @grpc_errors
    async def FinishAudit(
        self, request: identity_pb2.FinishAuditRequest, context: Context
    ) -> identity_pb2.FinishAuditResponse:
        await self.audit.finish(request.id, request.outcome, _detail(request.detail))
        return identity_pb2.FinishAuditResponse()

    @grpc_errors
    async def ListAudit(
        self, request: admin_pb2.ListAuditRequest, context: Context
    ) -> admin_pb2.ListAuditResponse:
        limit = request.limit or 50
        if not 1 <= limit <= MAX_LISTED:
            raise InvalidArgument("INVALID_LIMIT", f"limit must be 1..{MAX_LISTED}", field="limit")
        rows = await self.audit.entries(limit, request.target)
        return admin_pb2.ListAuditResponse(
            entries=[
                admin_pb2.AuditEntry(
                    id=r.id, at_ms=r.at_ms, operator=r.operator, action=r.action,
                    target=r.target, reason=r.reason, outcome=r.outcome, detail=r.detail,
                )
                for r in rows
            ]
        )  # fmt: skip
