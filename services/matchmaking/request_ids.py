"""A client's request ids: a call that seats its player runs once per id, and its retries
answer what the first did (`Retry`, `RequestIds.once`)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc

from services.common.errors import InvalidArgument, ServiceError
from services.matchmaking.deals import Deals
from services.matchmaking.ports import LobbyRepository
from services.matchmaking.table_documents import LobbyStatus, Table, TableDocuments

REQUEST_TTL_S = 86_400  # a client's request id answers its retries this long
PENDING_TTL_S = 30  # a call's claim on its request id before it has seated anyone
PENDING = "pending"


@dataclass
class Retry:
    """A client's request id for a call that seats its player (CreateTable, JoinByCode,
    QuickMatch): every retry answers the table the first call seated the player at, never a
    second table (Stripe's idempotency keys). `fingerprint` stands for the rest of the request:
    another request under a used id is refused."""

    player_id: str
    request_id: str
    fingerprint: str
    held: str = ""  # what the store holds for the id now: ours once claimed

    def value(self, table_id: str) -> str:
        return f"{table_id}|{self.fingerprint}"


class RequestIds:
    def __init__(self, docs: TableDocuments, store: LobbyRepository, deals: Deals) -> None:
        self.docs = docs
        self.store = store
        self.deals = deals

    async def once(self, retry: Retry | None, act: Callable[[], Awaitable[Table]]) -> Table:
        """Run a call that seats `retry.player_id` once per request id: a retry (or a call
        racing the first) answers the table the first call seated the player at, as it stands
        now (a deal left half-done is driven on). A first call that failed before seating
        anyone runs again."""
        if retry is None or not retry.request_id:
            return await act()
        mine = retry.value(f"{PENDING}:{secrets.token_hex(6)}")
        for _ in range(200):
            # A claim lives PENDING_TTL_S until the call binds a table to it: one whose process
            # died mid-call does not hold the id for a day.
            held = await self.store.hold(
                "request", retry.player_id, retry.request_id, mine, "", PENDING_TTL_S
            )
            if held is None:
                break
            table_id, _, fingerprint = held.partition("|")
            if fingerprint != retry.fingerprint:
                raise InvalidArgument(
                    "REQUEST_ID_REUSED",
                    "this request id was used for another request",
                    field="request_id",
                )
            if not table_id.startswith(PENDING):
                table = await self.docs.get(table_id)
                if table.status == LobbyStatus.DEALING:
                    table = await self.deals.deal(table_id)
                return table
            await asyncio.sleep(0.05)  # the first call is still under way
        else:
            raise ServiceError(
                "REQUEST_IN_PROGRESS",
                "this request is still being answered; retry",
                status=grpc.StatusCode.ABORTED,
            )
        retry.held = mine
        try:
            table = await act()
        except BaseException:
            if retry.held == mine:  # nobody seated: a retry runs the call again
                await self.store.release("request", retry.player_id, retry.request_id, mine)
            raise
        await self.bind(retry, table.table_id)
        return table

    async def bind(self, retry: Retry | None, table_id: str) -> None:
        """The request id answers `table_id` from now on (the player sits there)."""
        if retry is None or not retry.held:
            return
        value = retry.value(table_id)
        await self.store.hold(
            "request", retry.player_id, retry.request_id, value, retry.held, REQUEST_TTL_S
        )
        retry.held = value
