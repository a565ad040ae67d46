"""An identity service in the test's process with two operators: `admin` (every action) and
`loadtest` (adjust and look up only), on its own SQLite and the test's Valkey."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from services.common.host import ServiceHost
from services.identity.app import build_app

ADMIN, LOADER = "a" * 40, "l" * 40


@contextlib.asynccontextmanager
async def identity_host(tmp_path: Path, valkey_url: str) -> AsyncIterator[ServiceHost]:
    host = ServiceHost(
        build_app(
            {
                "BG_GRPC_PORT": "0",
                "BG_METRICS_PORT": "0",
                "BG_CONSOLE_PORT": "0",
                "BG_REDIS_URL": valkey_url,
                "BG_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/identity.db",
                "BG_OPERATOR_KEYS": f"admin={ADMIN},loadtest={LOADER}",
                "BG_OPERATOR_RIGHTS": "loadtest=adjust+lookup",
            }
        )
    )
    await host.start()
    try:
        yield host
    finally:
        await host.stop()
