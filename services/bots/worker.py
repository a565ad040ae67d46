"""Plays every computer seat listed in `bots:tables` through the gateway, like any client.

A bot signs in as its seat's player id (`cpu-<level>-<table>`) through the gateway's
ServiceLogin, with the bots' service credential (scoped to computer seats a table has; the bots
never hold the token-signing key), and sees only what that player may see: views and events,
never the seed or a future roll (I-26, I-31). `easy` and `normal` are the engine's bots.
Several workers may run: a short lease per table (redis-py's Lock: taken, renewed and released
only by its holder) keeps one bot per seat; a bot whose lease was lost stops playing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import secrets
import zlib
from typing import Any

import grpc
from redis.asyncio.lock import Lock
from redis.exceptions import LockNotOwnedError

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from client.play_wire import PlaySession, next_command
from evaluator.bots import seat
from services.common.backoff import pause
from services.contracts.redis_keys import BOT_TABLES, bot_lease_key, lobby_key
from services.contracts.seats import computer_level, is_computer

log = logging.getLogger("bg.bots")
LEASE_S = 30


class BotWorker:
    def __init__(self, redis: Any, gateway_addr: str, credential: str, max_tables: int) -> None:
        self.redis = redis
        self.gateway_addr = gateway_addr
        self.credential = credential
        self.max_tables = max_tables
        self.token = secrets.token_hex(8)
        self.playing: dict[str, asyncio.Task[None]] = {}
        self.finished = 0

    def lease(self, table_id: str) -> Lock:
        return Lock(
            self.redis, bot_lease_key(table_id), LEASE_S, blocking=False, thread_local=False
        )

    async def _play(self, table_id: str, lease: Lock) -> None:
        try:
            raw = await self.redis.get(lobby_key(table_id))
            if raw is None:
                await self.redis.srem(BOT_TABLES, table_id)
                return
            seats = json.loads(raw)["player_ids"]
            bot_id = next(p for p in seats if is_computer(p))
            level = computer_level(bot_id)
            # One connection per seat, as a device would have: rate limits are per connection.
            channel = grpc.aio.insecure_channel(
                self.gateway_addr, options=[("grpc.use_local_subchannel_pool", 1)]
            )
            choose, cube = seat(level)
            rng = random.Random(zlib.crc32(table_id.encode()))  # the same choices on a restart
            stub = gateway_pb2_grpc.GatewayServiceStub(channel)
            renew = asyncio.create_task(self._renew(lease, table_id))
            try:
                login = await stub.ServiceLogin(
                    gateway_pb2.ServiceLoginRequest(player_id=bot_id),
                    metadata=[("x-service-credential", self.credential)],
                    timeout=10,
                )
                auth = [("authorization", f"Bearer {login.token}")]
                async with PlaySession(stub, table_id, auth) as session:
                    await session.play_out(lambda v: next_command(v, choose, rng, cube), 86_400)
            finally:
                renew.cancel()
                await channel.close(None)
            await self.redis.srem(BOT_TABLES, table_id)
            self.finished += 1
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                log.exception(
                    "bot failed; another pass will pick the table up", extra={"table_id": table_id}
                )
            else:  # the gateway starting or restarting: expected, and handled by the next pass
                log.warning(
                    "gateway unavailable; another pass will pick the table up",
                    extra={"table_id": table_id, "error": exc.details()},
                )
        except Exception:
            log.exception(
                "bot failed; another pass will pick the table up", extra={"table_id": table_id}
            )
        finally:
            with contextlib.suppress(Exception):  # lapsed (maybe another's now), or Redis down
                await lease.release()
            self.playing.pop(table_id, None)

    async def _renew(self, lease: Lock, table_id: str) -> None:
        """Keep the lease every LEASE_S / 3; when another worker holds it now (this one stalled
        past it), stop this bot: one bot per seat."""
        while True:
            await asyncio.sleep(LEASE_S / 3)
            try:
                await lease.reacquire()
            except LockNotOwnedError:
                log.warning("a bot's lease was lost; it stops", extra={"table_id": table_id})
                if (playing := self.playing.get(table_id)) is not None:
                    playing.cancel()
                return
            except Exception as exc:  # Redis down: try again; the lease outlives two misses
                log.warning("cannot renew a bot's lease", extra={"error": repr(exc)[:300]})

    async def run_once(self) -> None:
        for raw in await self.redis.smembers(BOT_TABLES):
            table_id = raw.decode()
            if table_id in self.playing or len(self.playing) >= self.max_tables:
                continue
            lease = self.lease(table_id)
            if await lease.acquire(token=self.token):
                self.playing[table_id] = asyncio.create_task(self._play(table_id, lease))

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.run_once()
            except Exception:
                log.exception("bots: Redis unavailable; retrying")
            await pause(stop, 0.3)
        for task in list(self.playing.values()):
            task.cancel()
