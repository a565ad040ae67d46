"""The gateway's accounts and audit log on the identity service (bg.identity.v1): its
AccountsPort and AuditPort over gRPC. A refusal comes back as the identity service's typed
error, which the gateway hands on to the client as it is."""

from __future__ import annotations

import json

from bg.admin.v1 import admin_pb2
from bg.identity.v1 import identity_pb2 as pb
from bg.identity.v1 import identity_pb2_grpc
from services.common.errors import remote_call
from services.gateway.auth import Identity
from services.gateway.ports import AccountRecord, Detail, Session

TIMEOUT_S = 10.0  # an argon2 check under load takes its time; a stuck call must not hang a login


def _identity(account: pb.Account) -> Identity:
    return Identity(account.player_id, account.display_name)


def _session(session: pb.Session) -> Session:
    return Session(
        _identity(session.account), session.refresh_token, session.refresh_expires_ms,
        session.granted, session.issued_ms,
    )  # fmt: skip


class GrpcAccounts:
    def __init__(self, stub: identity_pb2_grpc.IdentityServiceAsyncStub) -> None:
        self.stub = stub

    async def device_login(self, device_id: str, name: str) -> Session:
        ask = pb.DeviceLoginRequest(device_id=device_id, display_name=name)
        return _session(await remote_call(self.stub.DeviceLogin(ask, timeout=TIMEOUT_S)))

    async def email_login(self, email: str, password: str) -> Session:
        ask = pb.EmailLoginRequest(email=email, password=password)
        return _session(await remote_call(self.stub.EmailLogin(ask, timeout=TIMEOUT_S)))

    async def link_email(self, player_id: str, email: str, password: str) -> None:
        ask = pb.LinkEmailRequest(player_id=player_id, email=email, password=password)
        await remote_call(self.stub.LinkEmail(ask, timeout=TIMEOUT_S))

    async def granted(self, player_id: str) -> None:
        ask = pb.MarkGrantedRequest(player_id=player_id)
        await remote_call(self.stub.MarkGranted(ask, timeout=TIMEOUT_S))

    async def delete(self, player_id: str) -> None:
        ask = pb.DeleteAccountRequest(player_id=player_id)
        await remote_call(self.stub.DeleteAccount(ask, timeout=TIMEOUT_S))

    async def set_name(self, player_id: str, name: str) -> Identity:
        ask = pb.SetNameRequest(player_id=player_id, display_name=name)
        return _identity(await remote_call(self.stub.SetName(ask, timeout=TIMEOUT_S)))

    async def names(self, player_ids: list[str]) -> dict[str, str]:
        if not player_ids:
            return {}
        ask = pb.NamesRequest(player_ids=player_ids)
        return dict((await remote_call(self.stub.Names(ask, timeout=TIMEOUT_S))).names)

    async def refresh(self, token: str) -> Session:
        ask = pb.RefreshRequest(refresh_token=token)
        return _session(await remote_call(self.stub.Refresh(ask, timeout=TIMEOUT_S)))

    async def logout(self, token: str) -> None:
        ask = pb.LogoutRequest(refresh_token=token)
        await remote_call(self.stub.Logout(ask, timeout=TIMEOUT_S))

    async def ban(self, player_id: str, operator: str, reason: str) -> None:
        ask = pb.BanRequest(player_id=player_id, operator=operator, reason=reason)
        await remote_call(self.stub.Ban(ask, timeout=TIMEOUT_S))

    async def unban(self, player_id: str) -> bool:
        ask = pb.UnbanRequest(player_id=player_id)
        return (await remote_call(self.stub.Unban(ask, timeout=TIMEOUT_S))).was_banned

    async def banned_ids(self) -> list[str]:
        found = await remote_call(self.stub.ListBanned(pb.ListBannedRequest(), timeout=TIMEOUT_S))
        return list(found.player_ids)

    async def record(self, player_id: str) -> AccountRecord:
        ask = pb.GetAccountRequest(player_id=player_id)
        r = await remote_call(self.stub.GetAccount(ask, timeout=TIMEOUT_S))
        return {
            "display_name": r.display_name, "kind": r.kind, "created_ms": r.created_ms,
            "deleted": r.deleted, "banned": r.banned, "ban_reason": r.ban_reason,
        }  # fmt: skip


class GrpcAudit:
    def __init__(self, stub: identity_pb2_grpc.IdentityServiceAsyncStub) -> None:
        self.stub = stub

    async def record(
        self,
        operator: str,
        action: str,
        target: str,
        reason: str,
        outcome: str,
        detail: Detail | None = None,
    ) -> int:
        ask = pb.RecordAuditRequest(
            operator=operator, action=action, target=target, reason=reason, outcome=outcome,
            detail=json.dumps(detail or {}, sort_keys=True),
        )  # fmt: skip
        return (await remote_call(self.stub.RecordAudit(ask, timeout=TIMEOUT_S))).id

    async def finish(self, entry: int, outcome: str, detail: Detail) -> None:
        ask = pb.FinishAuditRequest(
            id=entry, outcome=outcome, detail=json.dumps(detail, sort_keys=True)
        )
        await remote_call(self.stub.FinishAudit(ask, timeout=TIMEOUT_S))

    async def entries(self, limit: int = 50, target: str = "") -> list[admin_pb2.AuditEntry]:
        ask = admin_pb2.ListAuditRequest(limit=limit, target=target)
        return list((await remote_call(self.stub.ListAudit(ask, timeout=TIMEOUT_S))).entries)
