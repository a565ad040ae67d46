"""What signing in does to an account beyond its session, on the identity service with a real
wallet beside it (services/identity/sign_in.py): a new account's starter grant is credited at
its first login, once; never to a banned player; with the wallet away the login still works and
a later one asks again; closing an account moves its balance out first, and a guest has none."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from bg.identity.v1 import identity_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from infra.cluster.embedded import free_port
from services.common.connections import sql_engine
from services.common.errors import ServiceError
from services.common.host import ServiceHost
from services.gateway.adapters.grpc_identity import GrpcAccounts
from services.identity.adapters.sql_accounts import Accounts
from services.identity.app import build_app as identity
from services.wallet.app import build_app as wallet

pytestmark = pytest.mark.integration
GRANT = 750


@contextlib.asynccontextmanager
async def _wallet(
    tmp_path: Path, kafka_bootstrap: str, port: int
) -> AsyncIterator[wallet_pb2_grpc.WalletServiceAsyncStub]:
    host = ServiceHost(
        wallet(
            {
                "BG_GRPC_PORT": str(port), "BG_METRICS_PORT": "0", "BG_CONSOLE_PORT": "0",
                "BG_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/wallet.db",
                "BG_KAFKA_BOOTSTRAP": kafka_bootstrap, "BG_WALLET_CONSUME": "false",
                "BG_STARTER_GRANT": str(GRANT), "BG_WALLET_OPERATOR_TOKEN": "op",
            }
        )
    )  # fmt: skip
    await host.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield wallet_pb2_grpc.WalletServiceStub(channel)
    finally:
        await host.stop()


@contextlib.asynccontextmanager
async def _identity(
    tmp_path: Path, valkey_url: str, wallet_port: int
) -> AsyncIterator[GrpcAccounts]:
    host = ServiceHost(
        identity(
            {
                "BG_GRPC_PORT": "0", "BG_METRICS_PORT": "0", "BG_CONSOLE_PORT": "0",
                "BG_REDIS_URL": valkey_url,
                "BG_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/identity.db",
                "BG_WALLET_ADDR": f"127.0.0.1:{wallet_port}",
            }
        )
    )  # fmt: skip
    await host.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel:
            yield GrpcAccounts(identity_pb2_grpc.IdentityServiceStub(channel))
    finally:
        await host.stop()


async def _balance(stub: wallet_pb2_grpc.WalletServiceAsyncStub, player: str) -> int:
    return (await stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player))).balance


async def test_a_first_login_is_granted_once_and_a_banned_player_never(
    tmp_path: Path, valkey_url: str, kafka_bootstrap: str
) -> None:
    port = free_port()
    async with (
        _wallet(tmp_path, kafka_bootstrap, port) as books,
        _identity(tmp_path, valkey_url, port) as accounts,
    ):
        phone = secrets.token_urlsafe(32)
        ann = (await accounts.device_login(phone, "ann")).identity.player_id
        assert await _balance(books, ann) == GRANT
        await accounts.device_login(phone, "ann")  # again: no second grant
        assert await _balance(books, ann) == GRANT
        # A device banned before its account's first grant is never paid it.
        engine = sql_engine(f"sqlite+aiosqlite:///{tmp_path}/identity.db")
        try:
            store = Accounts(engine)
            rogue = secrets.token_urlsafe(32)
            bob = (await store.device_login(rogue, "bob")).account.player_id  # no grant asked
            await store.ban(bob, "ops", "fraud")
            await accounts.device_login(rogue, "bob")
            assert await _balance(books, bob) == 0
        finally:
            await engine.dispose()
        # Closing: the wallet's side first (its balance to closed-accounts), then the account.
        await accounts.delete(ann)
        assert await _balance(books, ann) == 0
        assert (await accounts.names([ann])) == {ann: "deleted player"}
        with pytest.raises(ServiceError) as guest:
            await accounts.delete("g0123456789abcdef")
        assert guest.value.code == "NO_ACCOUNT"


async def test_with_the_wallet_away_a_login_works_and_a_later_one_is_granted(
    tmp_path: Path, valkey_url: str, kafka_bootstrap: str
) -> None:
    port = free_port()
    async with _identity(tmp_path, valkey_url, port) as accounts:
        phone = secrets.token_urlsafe(32)
        first = await accounts.device_login(phone, "cyd")
        assert first.refresh_token  # signed in, the grant postponed
        async with _wallet(tmp_path, kafka_bootstrap, port) as books:
            assert await _balance(books, first.identity.player_id) == 0
            # A later login asks again (the identity's channel may still be backing off from
            # the wallet's absence for the first of them): once granted, never twice.
            for _ in range(50):  # bounded: ~10 s
                await accounts.device_login(phone, "cyd")
                if await _balance(books, first.identity.player_id):
                    break
                await asyncio.sleep(0.2)
            await accounts.device_login(phone, "cyd")
            assert await _balance(books, first.identity.player_id) == GRANT
