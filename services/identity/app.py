"""Composition root of the identity service: accounts, bans and the audit log on its own SQL
database, migrated at start; the gateway's IdentityService and SocialService (chat and friends)
and the operators' AdminService over gRPC; Redis for the live ban list, the chat and friends'
state, and the rate limits of chat and of the operators."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError
from websockets.asyncio.server import serve

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.analysis.v1 import analysis_pb2_grpc
from bg.identity.v1 import identity_pb2, identity_pb2_grpc
from bg.leaderboard.v1 import leaderboard_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2_grpc
from bg.social.v1 import social_pb2, social_pb2_grpc
from bg.table.v1 import table_pb2_grpc
from bg.wallet.v1 import wallet_pb2_grpc
from services.common import tracing
from services.common.backoff import pause
from services.common.balanced import channel_to
from services.common.connections import redis_check, redis_client, sql_check, sql_engine
from services.common.migrate import migrate
from services.common.service import ServiceApp, base_app
from services.common.shared_rate_limits import SharedLimiter
from services.common.static_files import StaticFiles
from services.common.store_clock import StoreClock, redis_times
from services.common.tokens import TokenSigner
from services.contracts import peers
from services.contracts.redis_keys import rate_limit_key
from services.identity.adapters.friends_lobby import MatchmakingFriendsLobby
from services.identity.adapters.redis_presence import RedisPlayerPresence
from services.identity.adapters.sql_accounts import Accounts, successor_keys
from services.identity.adapters.sql_audit import AuditLog
from services.identity.admin import (
    AdminServicer,
    OperatorLimits,
    Operators,
    Services,
    parse_operator_keys,
    parse_operator_rights,
)
from services.identity.api import IdentityServicer
from services.identity.ban_list import BanList
from services.identity.chat import ChatRoom
from services.identity.chat_moderation import ChatModeration
from services.identity.console import MAX_MESSAGE, Console
from services.identity.friends import Friends
from services.identity.player_names import PlayerNames
from services.identity.seating import Seatings
from services.identity.settings import load_settings
from services.identity.sign_in import AccountLifecycle
from services.identity.social import Social
from services.identity.social_api import SocialServicer

SERVICE_NAME = identity_pb2.DESCRIPTOR.services_by_name["IdentityService"].full_name
SOCIAL_NAME = social_pb2.DESCRIPTOR.services_by_name["SocialService"].full_name
ADMIN_NAME = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name
CONSOLE_DIR = Path(__file__).with_name("console")  # the operators' web console's page
MIGRATIONS = Path(__file__).with_name("migrations")  # the accounts, bans and audit tables
log = logging.getLogger("bg.identity")


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("identity", settings)
    engine = sql_engine(settings.database_url)
    app.closes(engine.dispose)
    keys = [k.strip() for k in settings.refresh_keys.split(",") if k.strip()]
    accounts = Accounts(engine, settings.refresh_ttl_s, successor_keys=successor_keys(keys))
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
        timeout=settings.redis_timeout_s,
    )
    app.closes(redis.aclose)
    limits = OperatorLimits(
        redis, settings.operator_rate_per_s, settings.operator_logins_per_s, rate_limit_key
    )
    # One replica alone can sign operators' tokens with a random secret; replicas share one.
    signer = TokenSigner(
        settings.operator_secret or secrets.token_urlsafe(32), settings.operator_ttl_s
    )
    operator_keys = parse_operator_keys(settings.operator_keys)
    rights = parse_operator_rights(settings.operator_rights, operator_keys)
    operators = Operators(operator_keys, signer, limits, rights)
    store_clock = StoreClock(redis_times(redis))
    chat_limits = SharedLimiter(
        redis,
        "chat",
        settings.chat_per_s,
        settings.chat_sync_s,
        burst=settings.chat_burst,
        key_of=rate_limit_key,
    )

    def register(server: grpc.aio.Server) -> list[str]:
        # The clients of the services the operators' tools and a first login call (grpc.aio
        # channels need the running loop, so they are made here, not above).
        interceptors = tracing.client_interceptors(app.tracer_provider)
        services = Services(
            matchmaking_pb2_grpc.MatchmakingServiceStub(
                app.channel(channel_to(peers.MATCHMAKING, settings.matchmaking_addr, interceptors))
            ),
            wallet_pb2_grpc.WalletServiceStub(
                app.channel(channel_to(peers.WALLET, settings.wallet_addr, interceptors))
            ),
            table_pb2_grpc.TableServiceStub(
                app.channel(channel_to(peers.TABLE, settings.table_addrs, interceptors))
            ),
            leaderboard_pb2_grpc.LeaderboardServiceStub(
                app.channel(channel_to(peers.LEADERBOARD, settings.leaderboard_addr, interceptors))
            ),
            analysis_pb2_grpc.AnalysisServiceStub(
                app.channel(channel_to(peers.ANALYSIS, settings.analysis_addr, interceptors))
            ),
            settings.wallet_operator_token,
        )
        lifecycle = AccountLifecycle(accounts, services.wallet)
        identity_pb2_grpc.add_IdentityServiceServicer_to_server(
            IdentityServicer(accounts, lifecycle), server
        )
        seatings = Seatings(redis, services.lobby, services.tables)
        chat = ChatRoom(
            redis, seatings.of, chat_limits, settings.chat_max_chars, settings.chat_guests
        )
        friends = Friends(
            redis,
            RedisPlayerPresence(redis),
            MatchmakingFriendsLobby(services.lobby, seatings),
            PlayerNames(redis, accounts).lookup,
            settings.friends_max,
            settings.challenge_ttl_s,
            now=store_clock,  # presence leases and challenges' expiry: the store's time (I-40)
        )
        social_pb2_grpc.add_SocialServiceServicer_to_server(
            SocialServicer(Social(chat, friends)), server
        )
        admin = AdminServicer(
            operators, accounts, AuditLog(engine), BanList(redis), ChatModeration(redis), services
        )
        admin_pb2_grpc.add_AdminServiceServicer_to_server(admin, server)
        return [SERVICE_NAME, SOCIAL_NAME, ADMIN_NAME]

    async def start() -> None:
        if operators.keys and not settings.operator_secret:
            log.warning("BG_OPERATOR_SECRET is unset: operators' tokens hold on this replica only")
        await migrate(engine, MIGRATIONS)
        app.background.spawn("operator-limits", limits.run(app.background.stop))
        app.background.spawn("chat-limits", chat_limits.run(app.background.stop))
        app.background.spawn("store-clock", store_clock.run(app.background.stop))
        # The record's restrictions back into Redis (derived state a flush may have lost).
        app.background.spawn("restrictions", _restore_restrictions(accounts, redis, app))

        await _serve_console(app, settings.host, settings.console_port)

    app.register = register
    app.checks += [sql_check(engine), redis_check(redis)]
    app.on_start.append(start)
    return app


async def _serve_console(app: ServiceApp, host: str, port: int) -> None:
    """The operators' console: its page and a WebSocket carrying the admin API's calls to this
    replica's own AdminService (services/identity/console.py)."""
    own = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host  # a test host's own address
    loopback = grpc.aio.insecure_channel(f"{own}:{app.ports['grpc']}")
    server = await serve(
        Console(loopback).handle,
        host,
        port,
        max_size=MAX_MESSAGE,
        process_request=StaticFiles(CONSOLE_DIR),
    )
    app.ports["console"] = server.sockets[0].getsockname()[1]

    async def close() -> None:
        server.close()
        await server.wait_closed()
        await loopback.close(None)

    app.closes(close)
    log.info("console listening", extra={"console_port": app.ports["console"]})


async def _restore_restrictions(accounts: Accounts, redis: Any, app: ServiceApp) -> None:
    """Put the record's restrictions back into Redis, retried until both answer (matchmaking reads
    the set; the `restrictions` table is the truth)."""
    wait = 1.0
    while not app.background.stop.is_set():
        try:
            await BanList(redis).restore_restricted(await accounts.restricted_ids())
            return
        except (RedisError, SQLAlchemyError) as err:
            log.warning("restrictions not restored yet", extra={"error": type(err).__name__})
        await pause(app.background.stop, wait)
        wait = min(30.0, wait * 2)
