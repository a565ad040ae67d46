"""Issue 58, item 4: a lobby change runs to its end even when its caller goes away
(services/matchmaking/api.py `_to_the_end`). During a wallet cut, a JoinByCode whose caller's
deadline passed while the wallet's balance check was timing out left "Task exception was never
retrieved ... ServiceError('DEADLINE_EXCEEDED')" in matchmaking's log, a traceback at ERROR for
an outcome the rules expect. A caller still waiting gets the failure as a typed refusal; one
gone is told nothing, and the log says the code once, with no traceback; nothing is seated."""

from __future__ import annotations

import asyncio
import gc
import logging

import grpc
import pytest

from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from services.common.errors import ServiceError, remote_call
from services.matchmaking.api import MatchmakingServicer
from services.matchmaking.lobby import Lobby
from services.matchmaking.table_documents import LobbyStatus
from tests.matchmaking.memory_lobby import MemoryLobbyStore
from tests.matchmaking.test_lobby import WAGERED, FakeTables, FakeWallet


class CutWallet(FakeWallet):
    """A wallet cut off from its database: a balance check times out after `after_s`."""

    def __init__(self) -> None:
        super().__init__()
        self.cut = False
        self.after_s = 0.3

    async def balance(self, player_id: str) -> int:
        if self.cut:
            await asyncio.sleep(self.after_s)
            raise ServiceError(
                "UPSTREAM_UNAVAILABLE", "DEADLINE_EXCEEDED: the wallet did not answer",
                status=grpc.StatusCode.DEADLINE_EXCEEDED,
            )  # fmt: skip
        return await super().balance(player_id)


async def test_a_join_whose_caller_left_ends_without_a_traceback_and_seats_nobody(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wallet = CutWallet()
    lobby = Lobby(MemoryLobbyStore(), wallet, FakeTables())
    servicer = MatchmakingServicer(lobby, "", tournaments=None)  # type: ignore[arg-type]
    server = grpc.aio.server()
    matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
    try:
        table = await lobby.create("ann", WAGERED, public=False)
        wallet.cut = True
        join = matchmaking_pb2.JoinByCodeRequest(player_id="bob", code=table.code, request_id="j1")

        # A caller who waits is refused by the wallet's code (retry later), typed.
        with pytest.raises(ServiceError) as refused:
            await remote_call(stub.JoinByCode(join, timeout=5))
        assert (refused.value.code, refused.value.status) == (
            "UPSTREAM_UNAVAILABLE",
            grpc.StatusCode.DEADLINE_EXCEEDED,
        )

        # A caller whose deadline passes first: the change goes on alone, and ends quietly.
        caplog.set_level(logging.INFO)
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            await stub.JoinByCode(join, timeout=0.1)
        assert gone.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert servicer._running  # still running alone: waited on without taking its result
        await asyncio.wait(list(servicer._running))
        gc.collect()  # an unretrieved task's exception is logged when the task is collected
        await asyncio.sleep(0)
        assert "never retrieved" not in caplog.text
        said = [r for r in caplog.records if r.getMessage().startswith("lobby change failed")]
        assert len(said) == 1 and said[0].levelno == logging.WARNING and not said[0].exc_info
        assert getattr(said[0], "code", "") == "UPSTREAM_UNAVAILABLE"

        after = await lobby.get(table.table_id)
        assert after.status is LobbyStatus.OPEN and after.player_ids == ["ann", ""]
        wallet.cut = False  # the retry, by its request id, runs the join again: bob sits
        joined = await stub.JoinByCode(join, timeout=5)
        assert list(joined.player_ids) == ["ann", "bob"]
    finally:
        await channel.close(None)
        await server.stop(0)
