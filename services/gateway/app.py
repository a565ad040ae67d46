"""Composition root of the gateway: token signer, identities, clients of the services."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from pathlib import Path

import grpc
from websockets.asyncio.server import serve

from bg.analysis.v1 import analysis_pb2_grpc
from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.identity.v1 import identity_pb2_grpc
from bg.leaderboard.v1 import leaderboard_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2_grpc
from bg.social.v1 import social_pb2_grpc
from bg.table.v1 import table_pb2_grpc
from bg.wallet.v1 import wallet_pb2_grpc
from services.common import tracing
from services.common.balanced import KEEPALIVE_OPTIONS, RECONNECT_OPTIONS, channel_to
from services.common.connections import redis_check, redis_client
from services.common.service import ServiceApp, base_app
from services.common.static_files import StaticFiles
from services.common.store_clock import StoreClock, redis_times
from services.common.tokens import TokenSigner, parse_keys
from services.contracts import peers
from services.gateway.account_handlers import AccountHandlers
from services.gateway.adapters.grpc_analysis import GrpcAnalyses
from services.gateway.adapters.grpc_identity import GrpcAccounts
from services.gateway.adapters.grpc_leaderboard import GrpcBoards
from services.gateway.adapters.grpc_matchmaking import GrpcLobby
from services.gateway.adapters.grpc_social import GrpcSocial
from services.gateway.adapters.grpc_wallet import GrpcBalances
from services.gateway.adapters.redis_presence import RedisPresenceStore
from services.gateway.api import GatewayServicer
from services.gateway.auth import GuestIdentities
from services.gateway.bans import Bans
from services.gateway.callers import Callers
from services.gateway.chat_delivery import ChatDelivery
from services.gateway.command_lines import CommandLines
from services.gateway.feed import TableFeed
from services.gateway.friends_streams import FriendsStreams
from services.gateway.handlers import GatewayHandlers
from services.gateway.live_streams import LiveStreams
from services.gateway.lobby_handlers import LobbyHandlers
from services.gateway.lobby_views import LobbyViews
from services.gateway.metrics import GatewayMetrics
from services.gateway.names import DisplayNames, Names
from services.gateway.play_handlers import PlayHandlers
from services.gateway.play_streams import PlayStreams
from services.gateway.presence import Presence
from services.gateway.privacy import Privacy
from services.gateway.rate_limits import RateLimits
from services.gateway.record_handlers import RecordHandlers
from services.gateway.replica_channels import ReplicaChannels
from services.gateway.settings import load_settings
from services.gateway.sign_in import SignIn
from services.gateway.social_handlers import SocialHandlers
from services.gateway.table_calls import TableCalls
from services.gateway.table_owners import TableOwners
from services.gateway.ws import MAX_MESSAGE, WsGateway

WEB_DIR = Path(__file__).with_name("web")  # the browser client (docs/browser-client.md)
SERVICE_NAME = gateway_pb2.DESCRIPTOR.services_by_name["GatewayService"].full_name
log = logging.getLogger("bg.gateway")
# A replica that died is found by keepalive, and one that came back is reconnected within a
# second (gRPC's default backoff reaches two minutes).
REPLICA_OPTIONS = [*KEEPALIVE_OPTIONS, *RECONNECT_OPTIONS]


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("gateway", settings)
    metrics = GatewayMetrics(app.metrics.registry)

    # Identities: signed tokens; accounts and the bans' record are the identity service's (bans
    # mirrored in Redis, where every call checks them).
    secret = settings.token_secret
    if not secret:
        # One replica alone can sign with a random secret; replicas must share BG_TOKEN_SECRET.
        secret = secrets.token_urlsafe(32)
    signer = TokenSigner(secret, settings.token_ttl_s, parse_keys(settings.token_keys))

    # What the gateways share in Redis: bans, presence, rate limits, the tables' feeds, names.
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
        timeout=settings.redis_timeout_s,
    )
    live = LiveStreams()  # the Play streams here, which a ban ends at once
    bans = Bans(redis, settings.ban_sync_s, on_ban=live.cut_off)
    # Presence leases expire by the store's clock (I-40): a gateway whose wall clock is off
    # would take the others' leases for lapsed and report their players away.
    store_clock = StoreClock(redis_times(redis))
    presence = Presence(RedisPresenceStore(redis), settings.presence_ttl_s, clock=store_clock)
    limits = RateLimits(
        redis,
        settings.rate_per_s,
        settings.rate_per_peer_s,
        settings.rate_sync_s,
        settings.rate_per_login_s,
        settings.rate_burst,
    )
    app.closes(redis.aclose)
    owners = TableOwners(redis)
    callers = Callers(signer, limits, bans)
    handlers: GatewayHandlers | None = None
    accounts: GrpcAccounts | None = None

    def register(server: grpc.aio.Server) -> list[str]:
        # The clients of the services (grpc.aio channels need the running loop, so they are
        # made here, not above), and the player and operator APIs on them.
        nonlocal handlers, accounts
        if not (settings.token_secret or settings.token_keys):
            log.warning("BG_TOKEN_SECRET is unset: tokens are valid on this replica only")
        interceptors = tracing.client_interceptors(app.tracer_provider)
        mm = app.channel(channel_to(peers.MATCHMAKING, settings.matchmaking_addr, interceptors))
        wallet = app.channel(channel_to(peers.WALLET, settings.wallet_addr, interceptors))
        tables = app.channel(channel_to(peers.TABLE, settings.table_addrs, interceptors))
        boards = app.channel(channel_to(peers.LEADERBOARD, settings.leaderboard_addr, interceptors))
        analyses = GrpcAnalyses(
            analysis_pb2_grpc.AnalysisServiceStub(
                app.channel(channel_to(peers.ANALYSIS, settings.analysis_addr, interceptors))
            )
        )
        identity_channel = app.channel(
            channel_to(peers.IDENTITY, settings.identity_addr, interceptors)
        )
        identity = identity_pb2_grpc.IdentityServiceStub(identity_channel)
        accounts = GrpcAccounts(identity)
        # Chat and friends are the identity service's; their live parts are here.
        social = GrpcSocial(social_pb2_grpc.SocialServiceStub(identity_channel))
        chat = ChatDelivery(social.hidden_from)
        app.closes(chat.close)
        feed = TableFeed(redis, on_seat=live.taken, on_chat=chat.received)
        app.closes(feed.close)
        # A channel to each table replica, for the calls of the tables it owns.
        replicas = ReplicaChannels(
            lambda address: grpc.aio.insecure_channel(
                address, options=REPLICA_OPTIONS, interceptors=interceptors
            )
        )
        app.closes(replicas.close)  # after the lines on them (closed last made first)
        balanced = table_pb2_grpc.TableServiceStub(tables)
        lines = CommandLines(balanced, settings.command_streams, owners, replicas)
        app.closes(lines.close)
        table_calls = TableCalls(balanced, owners, replicas)
        lobby = GrpcLobby(matchmaking_pb2_grpc.MatchmakingServiceStub(mm))
        wallet_stub = wallet_pb2_grpc.WalletServiceStub(wallet)
        names = Names(redis, signer.ttl_s)
        privacy = Privacy(redis)
        sign_in = SignIn(
            callers,
            GuestIdentities(),
            names,
            lobby,
            accounts,
            settings.access_ttl_s,
            settings.bots_secret,
        )
        streams = PlayStreams(
            callers, table_calls, lines, lobby, feed, presence, privacy, live, chat, metrics
        )
        display_names = DisplayNames(names, accounts)
        friends = FriendsStreams(social, presence, settings.friends_refresh_s)
        # One application layer; gRPC here, the WebSocket at start, both on it.
        handlers = GatewayHandlers(
            AccountHandlers(
                callers, sign_in, GrpcBalances(wallet_stub), display_names, privacy, metrics
            ),
            LobbyHandlers(callers, lobby, LobbyViews(privacy, table_calls)),
            PlayHandlers(callers, streams, table_calls, analyses, metrics),
            RecordHandlers(
                callers,
                GrpcBoards(leaderboard_pb2_grpc.LeaderboardServiceStub(boards)),
                analyses,
                display_names,
                streams,
            ),
            SocialHandlers(callers, social, friends, metrics),
            metrics,
        )
        # The unary methods are made from the handlers' names (api.py), which mypy cannot see:
        # tests/gateway/test_handlers.py checks every method of the service is served.
        servicer = GatewayServicer(handlers)  # type: ignore[abstract]
        gateway_pb2_grpc.add_GatewayServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    async def start() -> None:
        assert handlers is not None and accounts is not None  # registered before the start
        # The browsers' WebSocket, on the same origin as the browser client's files.
        ws_server = await serve(
            WsGateway(handlers).handle,
            settings.host,
            settings.ws_port,
            max_size=MAX_MESSAGE,
            process_request=StaticFiles(WEB_DIR),
        )
        app.ports["ws"] = ws_server.sockets[0].getsockname()[1]

        async def close_ws() -> None:
            ws_server.close()
            await ws_server.wait_closed()

        app.closes(close_ws)  # first of all at stop: the browsers' connections
        log.info("websocket listening", extra={"ws_port": app.ports["ws"]})
        background = app.background
        # The record's bans (restoring a flushed Redis), once the identity service answers.
        background.spawn("bans-record", bans.seed_from(accounts.banned_ids, background.stop))
        background.spawn("bans", bans.run(background.stop))
        background.spawn("store-clock", store_clock.run(background.stop))
        background.spawn("presence", presence.run(handlers.play.streams.report, background.stop))
        background.spawn("rate-limits", limits.run(background.stop))
        background.spawn("table-owners", owners.run(background.stop))

    app.register = register
    app.checks.append(redis_check(redis))
    app.on_start.append(start)
    return app
