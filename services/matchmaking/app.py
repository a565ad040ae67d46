"""Composition root of the matchmaking service: lobby on Redis, wallet and table clients."""

from __future__ import annotations

from collections.abc import Mapping

import grpc

from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from services.common import tracing
from services.common.deps import redis_check, redis_client
from services.common.service import ServiceApp, base_app
from services.matchmaking.adapters import GrpcTables, GrpcWallet
from services.matchmaking.api import MatchmakingServicer
from services.matchmaking.lobby import Lobby
from services.matchmaking.settings import load_settings

SERVICE_NAME = matchmaking_pb2.DESCRIPTOR.services_by_name["MatchmakingService"].full_name


def build_app(environ: Mapping[str, str] | None = None) -> ServiceApp:
    settings = load_settings(environ)
    app = base_app("matchmaking", settings)
    redis = redis_client(settings.redis_url, round_trips=app.metrics.redis_round_trips)
    channels: list[grpc.aio.Channel] = []

    def register(server: grpc.aio.Server) -> list[str]:
        interceptors = tracing.client_interceptors(app.tracer_provider)
        wallet = grpc.aio.insecure_channel(settings.wallet_addr, interceptors=interceptors)
        tables = [
            grpc.aio.insecure_channel(a, interceptors=interceptors) for a in settings.table_addrs
        ]
        channels.extend([wallet, *tables])
        lobby = Lobby(redis, GrpcWallet(wallet), GrpcTables(tables), settings.code_ttl_s)
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(
            MatchmakingServicer(lobby, settings.invite_base), server
        )
        return [SERVICE_NAME]

    async def close() -> None:
        for channel in channels:
            await channel.close(None)
        await redis.aclose()

    app.register = register
    app.checks.append(redis_check(redis))
    app.on_stop.append(close)
    return app
