"""Composition root of the gateway: token signer, identities, clients of the services."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Mapping
from typing import Any

import grpc

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from services.common import tracing
from services.common.balanced import leaderboard_channel, table_channel, wallet_channel
from services.common.deps import redis_check, redis_client, sql_check, sql_engine
from services.common.service import ServiceApp, base_app
from services.gateway.accounts import Accounts
from services.gateway.admin import AdminServicer, parse_operator_keys
from services.gateway.api import GatewayServicer
from services.gateway.audit import AuditLog
from services.gateway.auth import GuestIdentities, TokenSigner, parse_keys
from services.gateway.bans import Bans
from services.gateway.feed import TableFeed
from services.gateway.names import Names
from services.gateway.presence import Presence
from services.gateway.presence_store import RedisPresenceStore
from services.gateway.privacy import Privacy
from services.gateway.rate_limits import RateLimits
from services.gateway.settings import load_settings
from services.gateway.static_files import StaticFiles
from services.gateway.ws import MAX_MESSAGE, WsGateway

SERVICE_NAME = gateway_pb2.DESCRIPTOR.services_by_name["GatewayService"].full_name
ADMIN_NAME = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name
log = logging.getLogger("bg.gateway")


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("gateway", settings)
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
    )
    secret = settings.token_secret
    if not secret:
        # One replica alone can sign with a random secret; replicas must share BG_TOKEN_SECRET.
        secret = secrets.token_urlsafe(32)
    signer = TokenSigner(secret, settings.token_ttl_s, parse_keys(settings.token_keys))
    feed = TableFeed(redis)
    engine = sql_engine(settings.database_url)
    accounts = Accounts(engine, settings.refresh_ttl_s)
    bans = Bans(redis, settings.ban_sync_s)
    operator_keys = parse_operator_keys(settings.operator_keys)
    presence = Presence(RedisPresenceStore(redis), settings.presence_ttl_s)
    limits = RateLimits(
        redis,
        settings.rate_per_s,
        settings.rate_per_peer_s,
        settings.rate_sync_s,
        settings.rate_per_login_s,
    )
    channels: list[grpc.aio.Channel] = []
    parts: dict[str, Any] = {}
    stop = asyncio.Event()

    def register(server: grpc.aio.Server) -> list[str]:
        if not (settings.token_secret or settings.token_keys):
            log.warning("BG_TOKEN_SECRET is unset: tokens are valid on this replica only")
        interceptors = tracing.client_interceptors(app.tracer_provider)
        mm = grpc.aio.insecure_channel(settings.matchmaking_addr, interceptors=interceptors)
        wallet = wallet_channel(settings.wallet_addr, interceptors)
        tables = table_channel(settings.table_addrs, interceptors)
        boards = leaderboard_channel(settings.leaderboard_addr, interceptors)
        channels.extend([mm, wallet, boards, tables])
        servicer = GatewayServicer(
            signer,
            GuestIdentities(),
            mm,
            wallet,
            tables,
            presence,
            limits,
            boards,
            feed,
            Names(redis, signer.ttl_s),
            Privacy(redis),
            settings.command_streams,
            accounts=accounts,
            access_ttl_s=settings.access_ttl_s,
            bots_secret=settings.bots_secret,
            bans=bans,
        )
        gateway_pb2_grpc.add_GatewayServiceServicer_to_server(servicer, server)
        parts["servicer"] = servicer
        admin = AdminServicer(
            signer, operator_keys, accounts, AuditLog(engine), bans, limits,
            mm, wallet, tables, boards, settings.wallet_operator_token,
        )  # fmt: skip
        admin_pb2_grpc.add_AdminServiceServicer_to_server(admin, server)
        return [SERVICE_NAME, ADMIN_NAME]

    async def start_ws() -> None:
        await accounts.migrate()
        bans.seed(await accounts.banned_ids())  # Redis may be down yet: the task restores it
        parts["bans"] = asyncio.create_task(bans.run(stop), name="bans")
        from websockets.asyncio.server import serve

        ws = WsGateway(parts["servicer"])
        server = await serve(
            ws.handle,
            settings.host,
            settings.ws_port,
            max_size=MAX_MESSAGE,
            process_request=StaticFiles(),  # the browser client, on the same origin
        )
        parts["ws"] = server
        app.ports["ws"] = server.sockets[0].getsockname()[1]
        log.info("websocket listening", extra={"ws_port": app.ports["ws"]})
        parts["presence"] = asyncio.create_task(
            presence.run(parts["servicer"].report_presence, stop), name="presence"
        )
        parts["limits"] = asyncio.create_task(limits.run(stop), name="rate-limits")

    async def close() -> None:
        stop.set()
        for task in ("presence", "limits", "bans"):
            if task in parts:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.wait_for(parts[task], 5)
        if "ws" in parts:
            parts["ws"].close()
            await parts["ws"].wait_closed()
        await feed.close()
        if "servicer" in parts:
            await parts["servicer"].lines.close()
        for channel in channels:
            await channel.close(None)
        await redis.aclose()
        await engine.dispose()

    app.register = register
    app.checks.append(redis_check(redis))
    app.checks.append(sql_check(engine))
    app.on_start.append(start_ws)
    app.on_stop.append(close)
    return app
