"""Composition root of the matchmaking service: lobby on Redis, wallet and table clients."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import grpc

from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from services.common import event_log, tracing
from services.common.balanced import channel_to
from services.common.connections import redis_check, redis_client
from services.common.service import ServiceApp, base_app
from services.common.store_clock import StoreClock, redis_times
from services.contracts import peers
from services.contracts.topics import READERS
from services.matchmaking.adapters.grpc_clients import GrpcPool, GrpcTables, GrpcWallet
from services.matchmaking.adapters.redis_lobby import RedisLobbyStore
from services.matchmaking.adapters.redis_tournaments import RedisTournamentStore
from services.matchmaking.adapters.tournament_events import TournamentEvents
from services.matchmaking.api import MatchmakingServicer
from services.matchmaking.lobby import Lobby
from services.matchmaking.metrics import TournamentMetrics
from services.matchmaking.settings import load_settings
from services.matchmaking.tournaments import Tournaments

log = logging.getLogger("bg.matchmaking")
SWEEP_INTERVAL_S = 5.0
SERVICE_NAME = matchmaking_pb2.DESCRIPTOR.services_by_name["MatchmakingService"].full_name


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("matchmaking", settings)

    # The lobby's state, behind its port.
    redis = redis_client(
        settings.redis_url,
        round_trips=app.metrics.redis_round_trips,
        cluster=settings.redis_cluster,
        timeout=settings.redis_timeout_s,
    )
    app.closes(redis.aclose)
    store = RedisLobbyStore(redis)
    store_clock = StoreClock(redis_times(redis))
    events = event_log.open_event_log(settings, READERS, settings.kafka_idempotence)
    app.closes(events.close)
    results = TournamentEvents(
        events.publisher(f"{settings.replica or 'matchmaking'}-tournaments"),
        now=store_clock,  # the generations by the store's clock, as the keepers'
    )
    app.closes(results.close)
    lobby: Lobby | None = None
    tournaments: Tournaments | None = None

    def register(server: grpc.aio.Server) -> list[str]:
        # The clients of the wallet and the tables (grpc.aio channels need the running loop, so
        # they are made here, not above), the lobby on them, its API.
        nonlocal lobby
        interceptors = tracing.client_interceptors(app.tracer_provider)
        wallet = app.channel(channel_to(peers.WALLET, settings.wallet_addr, interceptors))
        tables = app.channel(channel_to(peers.TABLE, settings.table_addrs, interceptors))
        lobby = Lobby(
            store,
            GrpcWallet(wallet),
            GrpcTables(tables),
            settings.code_ttl_s,
            settings.max_open_tables,
        )
        nonlocal tournaments
        tournaments = Tournaments(
            RedisTournamentStore(redis),
            lobby,
            GrpcTables(tables),
            GrpcPool(wallet),
            results,
            now=store_clock,  # a scheduled start by the store's clock (I-40), not this machine's
            metrics=TournamentMetrics(app.metrics),
        )
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(
            MatchmakingServicer(lobby, settings.invite_base, tournaments), server
        )
        return [SERVICE_NAME]

    async def start() -> None:
        # Undo deals a crash left half-done (the saga's compensation), every few seconds.
        assert lobby is not None  # the host registers before it starts
        app.background.every("deal-sweeper", SWEEP_INTERVAL_S, lobby.sweep_deals, log)
        assert tournaments is not None
        app.background.spawn("store-clock", store_clock.run(app.background.stop))
        app.background.every("tournaments", settings.tournament_pass_s, tournaments.drive_all, log)

    app.register = register
    app.checks.append(redis_check(redis))
    app.on_start.append(start)
    return app
