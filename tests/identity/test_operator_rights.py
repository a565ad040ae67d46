"""Operators' rights (issue 59: a load test funds its players through the operators' API with an
operator that may adjust and look up, nothing else): BG_OPERATOR_RIGHTS limits an operator to
some audited actions, the sign-in says which, and any other call is refused PERMISSION_DENIED
NOT_ALLOWED before it acts, audited as refused. An operator not named may do everything; a
right that does not exist, or an operator that does not, is refused at start."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from services.common.errors import ServiceError, remote_call
from services.identity.admin import ACTIONS, parse_operator_rights
from tests.identity.hosts import ADMIN, LOADER, identity_host

pytestmark = pytest.mark.integration


@contextlib.asynccontextmanager
async def _admin(tmp_path: Path, valkey_url: str) -> AsyncIterator[Any]:
    async with (
        identity_host(tmp_path, valkey_url) as host,
        grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel,
    ):
        yield admin_pb2_grpc.AdminServiceStub(channel)


async def _token(stub: Any, name: str, key: str) -> tuple[str, list[str]]:
    login = await stub.OperatorLogin(admin_pb2.OperatorLoginRequest(name=name, key=key))
    return login.token, list(login.rights)


async def test_an_operator_limited_to_some_actions_is_refused_the_others_audited(
    tmp_path: Path, valkey_url: str
) -> None:
    async with _admin(tmp_path, valkey_url) as stub:
        loader, rights = await _token(stub, "loadtest", LOADER)
        assert rights == ["adjust", "lookup"]
        admin, everything = await _token(stub, "admin", ADMIN)
        assert set(everything) == ACTIONS
        ban = admin_pb2.BanRequest(player_id="g-somebody", reason="a test")
        with pytest.raises(ServiceError) as refused:
            await remote_call(stub.Ban(ban, metadata=[("authorization", f"Bearer {loader}")]))
        assert (refused.value.status, refused.value.code) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "NOT_ALLOWED",
        )
        with pytest.raises(ServiceError) as refused:
            await remote_call(
                stub.ListAudit(
                    admin_pb2.ListAuditRequest(), metadata=[("authorization", f"Bearer {loader}")]
                )
            )
        assert refused.value.code == "NOT_ALLOWED"
        audit = await stub.ListAudit(
            admin_pb2.ListAuditRequest(), metadata=[("authorization", f"Bearer {admin}")]
        )
        rows = [(e.operator, e.action, e.target, e.outcome) for e in audit.entries]
        assert ("loadtest", "ban", "g-somebody", "NOT_ALLOWED") in rows
        assert ("loadtest", "audit", "", "NOT_ALLOWED") in rows
        assert not any(a == "ban" and o == "ok" for _, a, _, o in rows)  # nothing was done


def test_rights_name_real_operators_and_real_actions() -> None:
    keys = {"admin": ADMIN, "loadtest": LOADER}
    assert parse_operator_rights("", keys) == {"admin": ACTIONS, "loadtest": ACTIONS}
    with pytest.raises(ValueError, match="no right spend; the rights: adjust"):
        parse_operator_rights("loadtest=adjust+spend", keys)
    with pytest.raises(ValueError, match="'nobody' is not an operator"):
        parse_operator_rights("nobody=adjust", keys)
