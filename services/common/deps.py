"""Connections to Redis and SQL, and the readiness checks that probe them.

Kafka is deliberately not a readiness dependency: events leave through outboxes (the table's
Redis stream, the wallet's outbox table), so a broker outage delays events but must not take
player-facing services out of the load balancer.
"""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as redis_asyncio
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.common.service import ReadinessCheck


def redis_client(url: str, max_connections: int = 200) -> redis_asyncio.Redis:
    """A pooled client; connects lazily, so building it does no I/O. At `max_connections`
    a caller waits (up to 5 s) for a free connection instead of failing at once."""
    pool = redis_asyncio.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=5, socket_connect_timeout=2.0,
        health_check_interval=10,
    )  # fmt: skip
    return redis_asyncio.Redis(connection_pool=pool)


def redis_check(client: redis_asyncio.Redis) -> ReadinessCheck:
    async def probe() -> object:
        return await client.ping()

    return ReadinessCheck("redis", probe)


def sql_engine(url: str) -> AsyncEngine:
    """An async engine; for SQLite files the parent folder is created first."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return create_async_engine(url, pool_pre_ping=True)


def sql_check(engine: AsyncEngine) -> ReadinessCheck:
    async def probe() -> object:
        async with engine.connect() as conn:
            return (await conn.execute(text("SELECT 1"))).scalar_one()

    return ReadinessCheck("sql", probe)
