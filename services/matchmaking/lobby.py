"""The lobby: tables, party codes, quick match and rematches, on a LobbyRepository (Redis in the
service, services/matchmaking/adapters/redis_lobby.py; stateless replicas). What it is made of:
the table documents and their compare-and-set (table_documents.py), who may sit
(admission.py), the deal and its saga (deals.py), the clients' request ids (request_ids.py)."""

from __future__ import annotations

import contextlib
import json
import secrets
from dataclasses import asdict

from bg.table.v1 import table_pb2
from engine.profiles import CPU_LEVELS
from services.common.clock import now_ms
from services.common.errors import (
    Conflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
)
from services.contracts.redis_keys import quick_queue_key
from services.contracts.seats import computer_seat, is_computer
from services.contracts.table_options import player_options, rules_from_proto
from services.matchmaking.admission import Admission
from services.matchmaking.deals import Deals
from services.matchmaking.ports import LobbyRepository, TablePort, WalletPort
from services.matchmaking.request_ids import RequestIds, Retry
from services.matchmaking.table_documents import (
    IN_ANOTHER_MATCH,
    RESTRICTED,
    LobbyStatus,
    Table,
    TableDocuments,
    normalize_code,
    options_json,
    options_key,
)

LIVE_FOR_S = 6 * 3600  # a table dealt longer ago than this drops off the live list


class Lobby:
    def __init__(
        self,
        store: LobbyRepository,
        wallet: WalletPort,
        tables: TablePort,
        code_ttl_s: int = 3600,
        max_open: int = 5,
    ) -> None:
        self.store = store
        self.tables = tables
        self.code_ttl_s = code_ttl_s
        self.docs = TableDocuments(store, code_ttl_s)
        self.deals = Deals(self.docs, store, wallet, tables)
        self.admission = Admission(self.docs, store, wallet, self.deals, max_open)
        self.requests = RequestIds(self.docs, store, self.deals)
        # What the API and the tournaments ask of the lobby besides its own operations.
        self.get = self.docs.get
        self.deal = self.deals.deal
        self.sweep_deals = self.deals.sweep
        self.once = self.requests.once
        self.refuse_restricted = self.admission.refuse_restricted

    async def create(
        self,
        player_id: str,
        opts: table_pb2.TableOptions,
        public: bool,
        quick: bool = False,
        retry: Retry | None = None,
    ) -> Table:
        _check_player(player_id)
        player_options(opts)  # validates every option, naming the bad field
        await self.admission.check(player_id, opts)
        vs_cpu = opts.level in CPU_LEVELS
        if not vs_cpu:
            await self.admission.within_cap(player_id)
        table_id = "t" + secrets.token_hex(8)
        code = await self.docs.new_code(table_id)
        seats = [player_id, ""]
        if vs_cpu:
            seats[1] = computer_seat(opts.level, table_id)
        table = Table(
            table_id=table_id,
            code=code,
            host_id=player_id,
            options=options_json(opts),
            public=public,
            player_ids=seats,
            code_expires_ms=now_ms() + self.code_ttl_s * 1000,
            quick=quick,
        )
        # A game against the computer has no seat to offer: never listed to join, but public it
        # is watchable and listed live like any other (I-35).
        open_since = table.created_ms if table.public and not vs_cpu else None
        await self.store.create(table_id, json.dumps(asdict(table)), open_since)
        await self.requests.bind(retry, table_id)
        await self.store.add_player_table("seated", player_id, table_id)
        if not vs_cpu:
            await self.store.add_player_table("hosting", player_id, table_id)
        await self._leave_other_scored(player_id, table)
        if vs_cpu:
            await self.store.add_bot_table(table_id)
            return await self.deals.deal(table_id)
        return table

    async def seat_pairing(
        self,
        table_id: str,
        players: list[str],
        opts: table_pb2.TableOptions,
        tournament_id: str,
    ) -> Table:
        """A tournament's pairing: the table with both players seated, dealt at once (casual
        too: no host starts it). `table_id` is the pairing's own, so a retry, or a second
        director, finds the first's table and deals nothing twice."""
        rules_from_proto(opts)
        table = Table(
            table_id=table_id,
            code="",
            host_id=players[0],
            options=options_json(opts),
            public=False,
            player_ids=list(players),
            tournament_id=tournament_id,
        )
        if await self.store.create_if_absent(table_id, json.dumps(asdict(table))):
            for p in players:
                await self.store.add_player_table("seated", p, table_id)
                await self._leave_other_scored(p, table)
        found = await self.docs.get(table_id)
        if found.status in (LobbyStatus.OPEN, LobbyStatus.DEALING):
            return await self.deals.deal(table_id)
        return found

    async def list_open(
        self,
        profile: str = "",
        match_length: int = 0,
        min_bet: int = 0,
        max_bet: int = 0,
        limit: int = 50,
    ) -> list[Table]:
        limit = 50 if limit <= 0 else min(limit, 200)
        out = []
        for table_id in await self.store.open_tables(500):
            try:
                table = await self.docs.get(table_id)
            except NotFound:
                await self.store.drop_open(table_id)
                continue
            o = table.options
            if profile and o.get("profile") != profile:
                continue
            if match_length and int(o.get("match_length", 1)) != match_length:
                continue
            bet = int(o.get("bet", 0))
            if (min_bet and bet < min_bet) or (max_bet and bet > max_bet):
                continue
            out.append(table)
            if len(out) >= limit:
                break
        return out

    async def player_tables(self, player_id: str) -> list[Table]:
        """The tables `player_id` sits at and that are not closed, oldest first."""
        _check_player(player_id)
        out = []
        for table_id in await self.store.player_tables("seated", player_id):
            try:
                table = await self.docs.get(table_id)
            except NotFound:
                table = None
            if (
                table is None
                or table.status == LobbyStatus.CLOSED
                or player_id not in table.player_ids
            ):
                await self.store.drop_player_table("seated", player_id, table_id)
                continue
            out.append(table)
        return sorted(out, key=lambda t: t.created_ms)

    async def list_live(self, profile: str = "", limit: int = 50) -> list[Table]:
        """Watchable tables dealt, newest first (I-35). Whether their match is still in play
        is the table service's to say: the gateway asks it before listing one."""
        limit = 50 if limit <= 0 else min(limit, 200)
        out = []
        for table_id in await self.store.live_tables(now_ms() - LIVE_FOR_S * 1000, 500):
            try:
                table = await self.docs.get(table_id)
            except NotFound:
                await self.store.drop_live(table_id)
                continue
            if table.status != LobbyStatus.DEALT:
                continue  # re-dealing (a rematch) or closed
            if profile and table.options.get("profile") != profile:
                continue
            out.append(table)
            if len(out) >= limit:
                break
        return out

    async def join_by_code(
        self, player_id: str, code_text: str, retry: Retry | None = None
    ) -> Table:
        _check_player(player_id)
        code = normalize_code(code_text)
        table_id = await self.store.code_table(code)
        if table_id is None:
            raise NotFound("UNKNOWN_CODE", "no table has this code (or it expired)", field="code")
        return await self.join(player_id, table_id, retry)

    async def join(self, player_id: str, table_id: str, retry: Retry | None = None) -> Table:
        found = await self.docs.get(table_id)
        if player_id not in found.player_ids:
            await self.admission.check(player_id, found.proto_options())

        def sit(table: Table) -> None:
            if player_id in table.player_ids:
                return  # already seated: joining again is harmless
            if table.status != LobbyStatus.OPEN:
                raise ServiceError(
                    "TABLE_NOT_OPEN", f"the table is {table.status}", field="table_id"
                )
            if "" not in table.player_ids:
                raise Conflict("TABLE_FULL", "both seats are taken", field="table_id")
            table.player_ids[table.player_ids.index("")] = player_id

        table = await self.docs.update(table_id, sit)
        await self.requests.bind(retry, table_id)
        await self.store.add_player_table("seated", player_id, table_id)
        await self._leave_other_scored(player_id, table)
        casual = table.options.get("profile") == "casual"
        if "" not in table.player_ids and (not casual or table.quick):
            return await self.deals.deal(table_id)
        return table

    async def quick_match(
        self, player_id: str, opts: table_pb2.TableOptions, retry: Retry | None = None
    ) -> Table:
        _check_player(player_id)
        player_options(opts)
        await self.admission.check(player_id, opts)
        if opts.level in CPU_LEVELS:
            raise InvalidArgument(
                "INVALID_OPTION", "quick match pairs people; use CreateTable vs CPU", field="level"
            )
        queue = quick_queue_key(options_key(opts))
        # Atomic pairing: two players arriving together must not both find the queue empty and
        # both wait forever. Each one's table exists before it can be found in the queue.
        mine: Table | None = None
        try:
            while True:
                waiting = await self.store.pop_waiting(queue)
                if waiting is None:
                    if mine is None:
                        # Bound to the request id only once it waits in the queue: until then
                        # the player may be paired elsewhere, and a retry must not answer it.
                        mine = await self.create(player_id, opts, public=False, quick=True)
                    pushed = await self.store.enqueue_if_empty(queue, mine.table_id)
                    if pushed:
                        await self.requests.bind(retry, mine.table_id)
                        return mine
                    continue  # someone queued meanwhile: pair with them
                try:
                    table = await self.docs.get(waiting)
                    if table.host_id == player_id:
                        await self.store.push_waiting(queue, waiting)  # my own table still waits
                        if mine is not None:
                            await self._abandon(mine)
                        await self.requests.bind(retry, table.table_id)
                        return table
                    if table.status != LobbyStatus.OPEN:
                        continue
                    joined = await self.join(player_id, table.table_id, retry)
                except (NotFound, Conflict):
                    continue
                except ServiceError as err:
                    if err.code != "TABLE_NOT_OPEN":
                        raise
                    continue
                host = joined.host_id
                if joined.close_reason in (f"{IN_ANOTHER_MATCH}:{host}", f"{RESTRICTED}:{host}"):
                    continue  # its host sits at another wagered match now, or was restricted
                if mine is not None:
                    await self._abandon(mine)
                return joined
        except BaseException:
            if mine is not None:  # made for this call and not its answer: not left open
                with contextlib.suppress(Exception):
                    await self._abandon(mine)
            raise

    async def _abandon(self, table: Table) -> None:
        """Close a quick-match table its host no longer needs (paired elsewhere)."""

        def close(t: Table) -> None:
            if t.status == LobbyStatus.OPEN and t.player_ids[1] == "":
                t.status, t.close_reason = LobbyStatus.CLOSED, "paired_elsewhere"

        await self.docs.update(table.table_id, close)

    async def start(self, player_id: str, table_id: str) -> Table:
        table = await self.docs.get(table_id)
        if table.host_id != player_id:
            raise PermissionDenied("NOT_HOST", "only the host starts the table")
        if table.options.get("profile") != "casual":
            raise ServiceError(
                "NOT_CASUAL", "only casual tables wait for Start; others deal when full"
            )
        if "" in table.player_ids:
            raise ServiceError("NOT_FULL", "two players are needed")
        return await self.deals.deal(table_id)

    async def leave(self, player_id: str, table_id: str) -> Table:
        table = await self.docs.get(table_id)
        if player_id not in table.player_ids:
            raise PermissionDenied("NOT_SEATED", "you do not sit at this table")
        if table.status == LobbyStatus.DEALT:
            await self.tables.leave(table_id, player_id, table.player_ids.index(player_id))
            return table
        if table.status == LobbyStatus.DEALING and self.deals.stale(table):
            await self.deals.deal(table_id)  # undone: the stakes go back, the table closes

        def stand(t: Table) -> None:
            if t.status not in (LobbyStatus.OPEN, LobbyStatus.CLOSED):
                raise ServiceError("DEALING", "the match is being dealt")
            if player_id == t.host_id:
                # Leaving before the deal is free.
                t.status, t.close_reason = LobbyStatus.CLOSED, "host_left"
            else:
                t.player_ids[t.player_ids.index(player_id)] = ""

        return await self.docs.update(table_id, stand)

    async def rematch(self, player_id: str, table_id: str) -> Table:
        table = await self.docs.get(table_id)
        if player_id not in table.player_ids:
            raise PermissionDenied("NOT_SEATED", "you do not sit at this table")
        if not await self.tables.rematch_agreed(table_id, player_id):
            raise ServiceError("NO_REMATCH", "no rematch was agreed (I-32)")
        await self.admission.refuse_restricted(player_id, table.proto_options())

        def reopen(t: Table) -> None:
            if t.status != LobbyStatus.DEALT or t.match_id != table.match_id:
                return  # already re-dealt by the other player's call
            t.status = LobbyStatus.OPEN

        await self.docs.update(table_id, reopen)
        return await self.deals.deal(table_id)

    async def _leave_other_scored(self, player_id: str, table: Table) -> None:
        """I-18: starting another scored game leaves the first."""
        if table.options.get("profile") != "scored":
            return
        other = await self.store.scored_table(player_id)
        if other is None or other == table.table_id:
            return
        try:
            previous = await self.docs.get(other)
            if previous.status == LobbyStatus.DEALT and player_id in previous.player_ids:
                await self.tables.leave(
                    previous.table_id, player_id, previous.player_ids.index(player_id)
                )
        except ServiceError:
            pass  # already over or gone
        await self.store.clear_scored_table(player_id)


def _check_player(player_id: str) -> None:
    if not player_id or len(player_id) > 64 or is_computer(player_id):
        raise PermissionDenied("BAD_PLAYER", "unknown player")
