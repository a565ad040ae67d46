"""Who may take a seat: checked before a player sits (the deal still decides what it holds)."""

from __future__ import annotations

import grpc

from bg.table.v1 import table_pb2
from services.common.errors import NotFound, PermissionDenied, ServiceError
from services.matchmaking.deals import Deals
from services.matchmaking.ports import LobbyRepository, WalletPort
from services.matchmaking.table_documents import (
    RESTRICTED_WORDS,
    LobbyStatus,
    TableDocuments,
    ranked_or_staked,
)


class Admission:
    def __init__(
        self,
        docs: TableDocuments,
        store: LobbyRepository,
        wallet: WalletPort,
        deals: Deals,
        max_open: int,
    ) -> None:
        self.docs = docs
        self.store = store
        self.wallet = wallet
        self.deals = deals
        self.max_open = max_open

    async def check(self, player_id: str, opts: table_pb2.TableOptions) -> None:
        """Before a player sits at a table of `opts`: not at another wagered match in play (W-1,
        first: the likelier story), not restricted from it, able to cover its bet."""
        await self.deals.not_in_another_match(player_id, opts)
        await self.refuse_restricted(player_id, opts)
        await self.can_cover(player_id, opts)

    async def refuse_restricted(
        self, player_id: str, opts: table_pb2.TableOptions | None = None
    ) -> None:
        """PERMISSION_DENIED RESTRICTED for a player an operator restricted to casual unrated
        play, asking for anything else (`opts`; None: a tournament). Read from Redis at each
        call, so a restriction holds at once whatever gateway the player comes through."""
        if opts is not None and not ranked_or_staked(opts):
            return
        if await self.store.restricted([player_id]):
            raise PermissionDenied("RESTRICTED", RESTRICTED_WORDS, player_id=player_id)

    async def can_cover(self, player_id: str, opts: table_pb2.TableOptions) -> None:
        """A wagered table is refused at once to a player who cannot cover its bet (the escrow
        at the deal still decides: the balance can change in between, I-10)."""
        if opts.profile != "wagered":
            return
        if await self.wallet.balance(player_id) < opts.bet:
            raise ServiceError(
                "INSUFFICIENT_FUNDS",
                f"the bet is {opts.bet} diamonds; you cannot cover it",
                field="options.bet",
                players=player_id,
            )

    async def within_cap(self, player_id: str) -> None:
        """At most `max_open` tables of a player waiting for an opponent (party tables and
        quick-match queues together): a flood of tables from one player is refused."""
        waiting = 0
        for table_id in await self.store.player_tables("hosting", player_id):
            try:
                still = (await self.docs.get(table_id)).status == LobbyStatus.OPEN
            except NotFound:
                still = False
            if still:
                waiting += 1
            else:
                await self.store.drop_player_table("hosting", player_id, table_id)
        if waiting >= self.max_open:
            raise ServiceError(
                "TOO_MANY_TABLES",
                f"at most {self.max_open} tables waiting for an opponent at once",
                status=grpc.StatusCode.RESOURCE_EXHAUSTED,
            )
