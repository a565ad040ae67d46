"""The deal: a table's match made, and its stakes escrowed, exactly once; one wagered match at a
time per player (W-1).

The deal is a saga: if the match cannot be created, the escrow is refunded and the table closes
(players can leave it). It uses idempotent keys derived from the match id, so a retried or
repeated deal never escrows twice or creates two matches. A deal a crash left half-done is
driven on by the next call within DEAL_RESUME_S, and after that settled by any call or the
sweeper over the dealing index (completed if its match exists, compensated if not), so the
stakes are never held for a match that will not be played; the wallet's reconciler, whose bound
is far longer, is the last line.
"""

from __future__ import annotations

import logging

import grpc

from bg.table.v1 import table_pb2
from services.common.clock import now_ms
from services.common.errors import NotFound, ServiceError
from services.contracts import money_keys
from services.matchmaking.ports import LobbyRepository, TablePort, WalletPort
from services.matchmaking.table_documents import (
    IN_ANOTHER_MATCH,
    RESTRICTED,
    LobbyStatus,
    Table,
    TableDocuments,
    ranked_or_staked,
    staked,
)

log = logging.getLogger("bg.matchmaking.lobby")
WAGERED_HOLD_TTL_S = 7 * 86_400  # longer than any wagered match lasts
DEAL_RESUME_S = money_keys.DEAL_WINDOW_S  # a deal older than this is settled, not driven on
# Failures after which a create may or may not have happened (the answer was lost).
AMBIGUOUS = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNKNOWN}
)


class Deals:
    def __init__(
        self, docs: TableDocuments, store: LobbyRepository, wallet: WalletPort, tables: TablePort
    ) -> None:
        self.docs = docs
        self.store = store
        self.wallet = wallet
        self.tables = tables

    async def deal(self, table_id: str) -> Table:
        """Escrow (wagered) then create the match; idempotent per match id. A deal that cannot
        create its match, or that was left half-done for DEAL_RESUME_S, is undone."""

        def claim(t: Table) -> None:
            if t.status == LobbyStatus.OPEN:
                t.matches += 1
                t.status = LobbyStatus.DEALING
                t.match_id = f"{t.table_id}-{t.matches}"
                t.dealing_since_ms = now_ms()

        table = await self.docs.update(table_id, claim)
        if table.status != LobbyStatus.DEALING:
            return table
        opts = table.proto_options()
        if self.stale(table):
            # An earlier create whose answer was lost may have made the match: a match that
            # exists keeps its stakes (the deal completes), one that does not is undone. The
            # table service unreachable: asked again on the next call or sweep.
            if not await self.tables.match_exists(table_id, table.match_id):
                return await self._undo_deal(table, "deal_abandoned")
            fingerprint = await self.tables.create_match(  # idempotent: the existing match's
                table_id, table.match_id, table.player_ids, opts
            )
            return await self._dealt(table, fingerprint, opts)
        restrictable = ranked_or_staked(opts) and not table.tournament_id  # (a bracket plays on)
        if restrictable and (held := await self.store.restricted(table.player_ids)):
            # Restricted since they sat down (issue 61): nothing is taken, the table closes.
            return await self._close_dealing(table, f"{RESTRICTED}:{held[0]}")
        if staked(opts):
            busy = await self._hold_wagered(table)
            if busy:  # one wagered match in play at a time (docs/protocol.md, W-1)
                return await self._close_dealing(table, f"{IN_ANOTHER_MATCH}:{busy}")
            try:
                await self.wallet.escrow(
                    f"escrow:{table.match_id}", table.match_id, table.player_ids, opts.bet
                )
            except ServiceError as err:
                if err.code != "INSUFFICIENT_FUNDS":
                    raise
                reason = "cannot_cover:" + err.metadata.get("players", "")
                return await self._close_dealing(table, reason)  # I-10: nothing taken
        try:
            fingerprint = await self.tables.create_match(
                table_id, table.match_id, table.player_ids, opts
            )
        except ServiceError as err:
            if err.status in AMBIGUOUS:
                # The table service may have made the match and lost the answer: undoing now
                # could refund a match that is then played. The deal stays DEALING: the next
                # call drives it on; past DEAL_RESUME_S the sweeper completes it if the match
                # exists and undoes it if not.
                log.warning(
                    "the match may not have been created; the deal stays open",
                    extra={"table_id": table_id, "match_id": table.match_id, "code": err.code},
                )
                raise
            log.warning(
                "the match could not be created; undoing the deal",
                extra={"table_id": table_id, "match_id": table.match_id, "code": err.code},
            )
            return await self._undo_deal(table, "deal_failed")
        return await self._dealt(table, fingerprint, opts)

    async def _dealt(self, table: Table, fingerprint: str, opts: table_pb2.TableOptions) -> Table:
        match_id = table.match_id

        def dealt(t: Table) -> None:
            if t.status == LobbyStatus.DEALING and t.match_id == match_id:
                t.status, t.fingerprint = LobbyStatus.DEALT, fingerprint

        table = await self.docs.update(table.table_id, dealt)
        if table.watchable:
            await self.store.mark_live(table.table_id, now_ms())
        if opts.profile == "scored":
            for p in table.player_ids:
                await self.store.set_scored_table(p, table.table_id, 86_400)
        return table

    @staticmethod
    def stale(table: Table) -> bool:
        """A deal left half-done for DEAL_RESUME_S: settled, not driven on."""
        return now_ms() - table.dealing_since_ms > DEAL_RESUME_S * 1000

    async def _undo_deal(self, table: Table, reason: str) -> Table:
        """Compensate a deal: refund its escrow (if any), then close the table. The refund comes
        first, so a failure leaves the deal DEALING to be undone again, never a closed table
        holding stakes."""
        if staked(table.proto_options()):
            try:
                await self.wallet.refund(f"refund:{table.match_id}", table.match_id)
            except ServiceError as err:
                if err.code not in ("UNKNOWN_MATCH", "ESCROW_CLOSED"):
                    raise  # the wallet is down: undone on a later call or sweep
        return await self._close_dealing(table, reason)

    async def _close_dealing(self, table: Table, reason: str) -> Table:
        match_id = table.match_id

        def close(t: Table) -> None:
            if t.status == LobbyStatus.DEALING and t.match_id == match_id:
                t.status, t.close_reason = LobbyStatus.CLOSED, reason

        closed = await self.docs.update(table.table_id, close)
        if staked(table.proto_options()):
            await self._release_wagered(table, table.player_ids)
        return closed

    async def sweep(self) -> int:
        """Settle every deal left half-done past DEAL_RESUME_S: completed when its match exists
        (a create whose answer was lost), undone when not; returns how many were undone."""
        cutoff = now_ms() - int(DEAL_RESUME_S * 1000)
        undone = 0
        for table_id in await self.store.dealing_before(cutoff, 100):
            try:
                table = await self.deal(table_id)
            except NotFound:
                await self.store.drop_dealing(table_id)
                continue
            except ServiceError as err:
                log.warning(
                    "cannot finish or undo a deal yet",
                    extra={"table_id": table_id, "code": err.code},
                )
                continue
            undone += table.status == LobbyStatus.CLOSED
        if undone:
            log.warning("undid deals left half-done", extra={"count": undone})
        return undone

    # -- one wagered match at a time (W-1) ---------------------------------------------------

    async def _hold_wagered(self, table: Table) -> str:
        """Hold every player of this deal as sitting at its match; "" when all are held, else
        the first player who sits at another wagered match in play (nothing held then). A hold
        of a match no longer in play is taken over; a hold is released when its deal is undone,
        and otherwise outlives its match until the player's next deal finds it over."""
        ref = f"{table.table_id}|{table.match_id}"
        held: list[str] = []
        for player in table.player_ids:
            replacing = ""
            for _ in range(5):
                other = await self.store.hold(
                    "wagered", player, "match", ref, replacing, WAGERED_HOLD_TTL_S
                )
                if other is None:
                    held.append(player)
                    break
                if await self.in_play(other):
                    break
                replacing = other  # that match is over: take its place
            else:
                other = "contended"
            if other is not None:
                await self._release_wagered(table, held)
                return player
        return ""

    async def _release_wagered(self, table: Table, players: list[str]) -> None:
        ref = f"{table.table_id}|{table.match_id}"
        for player in players:
            await self.store.release("wagered", player, "match", ref)

    async def in_play(self, ref: str) -> bool:
        """Whether a held wagered match ("<table>|<match>") is being dealt or played."""
        table_id, _, match_id = ref.partition("|")
        try:
            table = await self.docs.get(table_id)
        except NotFound:
            return False
        if table.match_id != match_id:
            return False  # that table has moved on (a rematch): its old match is over
        if table.status == LobbyStatus.DEALING:
            return True
        if table.status == LobbyStatus.DEALT:
            return await self.tables.match_in_play(table_id, match_id)
        return False

    async def not_in_another_match(self, player_id: str, opts: table_pb2.TableOptions) -> None:
        """A wagered table is refused at once to a player sitting at a wagered match in play
        (the deal still decides: W-1)."""
        if opts.profile != "wagered":
            return
        ref = await self.store.held("wagered", player_id, "match")
        if ref is not None and await self.in_play(ref):
            raise ServiceError(
                "IN_ANOTHER_MATCH",
                "you are playing a wagered match: finish it before another",
                table_id=ref.partition("|")[0],
            )
