"""The identity service over gRPC, through the gateway's own adapter (services/gateway/adapters/
grpc_identity.py) as the gateway calls it: sessions, refusals with their code, field and
particulars unchanged, the bans' record; and its migrations make exactly the declared schema
(the gateway's database of before carries over: the same version table)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection

from bg.identity.v1 import identity_pb2_grpc
from services.common.connections import sql_engine
from services.common.errors import ServiceError
from services.common.host import ServiceHost
from services.common.migrate import version_table
from services.contracts.seats import ACCOUNT_PREFIX
from services.gateway.adapters.grpc_identity import GrpcAccounts
from services.identity.adapters.sql_accounts import Accounts
from services.identity.app import MIGRATIONS, build_app
from services.identity.schema import metadata

pytestmark = pytest.mark.integration
Identity = tuple[GrpcAccounts, "identity_pb2_grpc.IdentityServiceAsyncStub"]


@contextlib.asynccontextmanager
async def _identity(db: Path, keys: str = "k1") -> AsyncIterator[Identity]:
    app = build_app(
        {
            "BG_GRPC_PORT": "0",
            "BG_METRICS_PORT": "0",
            "BG_CONSOLE_PORT": "0",
            "BG_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "BG_REFRESH_KEYS": keys,
        }
    )
    host = ServiceHost(app)
    await host.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel:
            stub = identity_pb2_grpc.IdentityServiceStub(channel)
            yield GrpcAccounts(stub), stub
    finally:
        await host.stop()


@pytest.fixture
async def identity(tmp_path: Path) -> AsyncIterator[Identity]:
    async with _identity(tmp_path / "identity.db") as found:
        yield found


async def _refused(call: Any) -> ServiceError:
    with pytest.raises(ServiceError) as err:
        await call
    return err.value


async def test_a_session_and_its_rotation_cross_the_wire_intact(identity: Identity) -> None:
    accounts, _ = identity
    login = await accounts.device_login(secrets.token_urlsafe(32), "ann")
    assert login.identity.name == "ann" and login.identity.player_id.startswith(ACCOUNT_PREFIX)
    assert login.issued_ms > 0 and login.refresh_expires_ms > 0
    first = await accounts.refresh(login.refresh_token)
    assert first.identity == login.identity
    assert await accounts.refresh(login.refresh_token) == first  # a retry: the very same
    renamed = await accounts.set_name(login.identity.player_id, "Annie")
    assert await accounts.names([renamed.player_id, "g:nobody"]) == {renamed.player_id: "Annie"}
    await accounts.logout(first.refresh_token)
    ended = await _refused(accounts.refresh(first.refresh_token))
    assert ended.code == "REFRESH_REVOKED" and ended.status == grpc.StatusCode.UNAUTHENTICATED


async def test_a_refusal_keeps_its_code_field_and_particulars(identity: Identity) -> None:
    accounts, _ = identity
    bad = await _refused(accounts.device_login(secrets.token_urlsafe(32), "x"))
    assert (bad.code, bad.field, bad.status) == (
        "INVALID_NAME", "display_name", grpc.StatusCode.INVALID_ARGUMENT,
    )  # fmt: skip
    kim = await accounts.device_login(secrets.token_urlsafe(32), "kim")
    await accounts.link_email(kim.identity.player_id, "kim@example.com", "a long passphrase")
    for _ in range(5):  # the lockout's threshold
        wrong = await _refused(accounts.email_login("kim@example.com", "not the passphrase"))
        assert wrong.code == "BAD_CREDENTIALS"
    locked = await _refused(accounts.email_login("kim@example.com", "a long passphrase"))
    assert locked.code == "LOCKED" and int(locked.metadata["retry_after_s"]) > 0
    other = await accounts.device_login(secrets.token_urlsafe(32), "kay")
    ask = accounts.link_email(other.identity.player_id, "KIM@example.com", "another passphrase")
    taken = await _refused(ask)
    assert (taken.code, taken.field, taken.status) == (
        "EMAIL_TAKEN", "email", grpc.StatusCode.ALREADY_EXISTS,
    )  # fmt: skip


async def test_the_bans_record_reaches_the_gateway(tmp_path: Path) -> None:
    """ListBanned: what a gateway reads at its start to put a flushed Redis's ban list back."""
    db = tmp_path / "identity.db"
    async with _identity(db) as (accounts, _):
        assert await accounts.banned_ids() == []
        engine = sql_engine(f"sqlite+aiosqlite:///{db}")
        try:
            await Accounts(engine).ban("g:guest-1", "ops", "spam")
        finally:
            await engine.dispose()
        assert await accounts.banned_ids() == ["g:guest-1"]


async def test_a_retry_across_replicas_sharing_the_keys_answers_the_same_session(
    tmp_path: Path,
) -> None:
    """BG_REFRESH_KEYS shared: a refresh retried on another replica (a balanced channel may
    send it there) answers the first's session; the first key derives, the rest are checked,
    so a rotation in between changes nothing."""
    db = tmp_path / "identity.db"
    async with _identity(db, "old") as (one, _):
        login = await one.device_login(secrets.token_urlsafe(32), "max")
        first = await one.refresh(login.refresh_token)
    async with _identity(db, "new,old") as (two, _):
        assert await two.refresh(login.refresh_token) == first
    async with _identity(db, "other") as (three, _):
        copied = await _refused(three.refresh(login.refresh_token))
        assert copied.code == "REFRESH_REUSED"


async def test_migrations_make_the_declared_schema(tmp_path: Path) -> None:
    async with _identity(tmp_path / "identity.db"):
        pass
    engine = sql_engine(f"sqlite+aiosqlite:///{tmp_path / 'identity.db'}")

    def diff(sync_conn: Connection) -> Any:
        opts = {"version_table": version_table(MIGRATIONS)}
        return compare_metadata(MigrationContext.configure(sync_conn, opts=opts), metadata)

    try:
        assert version_table(MIGRATIONS) == "alembic_version_accounts"  # the gateway's, kept
        async with engine.connect() as conn:
            assert await conn.run_sync(diff) == []
    finally:
        await engine.dispose()
