"""The gateway's accounts on the identity service (bg.identity.v1): its AccountsPort over
gRPC. A refusal comes back as the identity service's typed
error, which the gateway hands on to the client as it is."""

from __future__ import annotations

from bg.identity.v1 import identity_pb2 as pb
from bg.identity.v1 import identity_pb2_grpc
from services.common.errors import remote_call
from services.common.tokens import Identity
from services.gateway.ports import Session

TIMEOUT_S = 10.0  # an argon2 check under load takes its time; a stuck call must not hang a login


def _identity(account: pb.Account) -> Identity:
    return Identity(account.player_id, account.display_name)


def _session(session: pb.Session) -> Session:
    return Session(
        _identity(session.account),
        session.refresh_token,
        session.refresh_expires_ms,
        session.issued_ms,
        session.email,
        session.restricted,
    )


class GrpcAccounts:
    def __init__(self, stub: identity_pb2_grpc.IdentityServiceAsyncStub) -> None:
        self.stub = stub

    async def device_login(self, device_id: str, name: str, exact: bool = False) -> Session:
        ask = pb.DeviceLoginRequest(device_id=device_id, display_name=name, exact_name=exact)
        return _session(await remote_call(self.stub.DeviceLogin(ask, timeout=TIMEOUT_S)))

    async def email_login(self, email: str, password: str) -> Session:
        ask = pb.EmailLoginRequest(email=email, password=password)
        return _session(await remote_call(self.stub.EmailLogin(ask, timeout=TIMEOUT_S)))

    async def link_email(self, player_id: str, email: str, password: str) -> None:
        ask = pb.LinkEmailRequest(player_id=player_id, email=email, password=password)
        await remote_call(self.stub.LinkEmail(ask, timeout=TIMEOUT_S))

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

    async def banned_ids(self) -> list[str]:
        found = await remote_call(self.stub.ListBanned(pb.ListBannedRequest(), timeout=TIMEOUT_S))
        return list(found.player_ids)
