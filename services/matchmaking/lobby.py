"""The lobby: tables, party codes, quick match and the deal, on a LobbyRepository (Redis in the
service, services/matchmaking/adapters/redis_lobby.py; stateless replicas).

A table's document changes by compare-and-set: two players racing for the last seat cannot
both get it. The deal (escrow for wagered tables, then the match on the table service) uses
idempotent keys derived from the match id, so a retried or repeated deal never escrows twice or
creates two matches.

The deal is a saga: if the match cannot be created, the escrow is refunded and the table closes
(players can leave it). A deal a crash left half-done is driven on by the next call within
DEAL_RESUME_S, and after that settled by any call or the sweeper over the dealing index
(completed if its match exists, compensated if not), so the stakes are never held for a match
that will not be played; the wallet's reconciler, whose bound is far longer, is the last line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

import grpc

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
from services.contracts import money_keys
from services.contracts.redis_keys import quick_queue_key
from services.contracts.seats import computer_seat, is_computer
from services.contracts.table_options import player_options, rules_from_proto
from services.matchmaking.ports import LobbyRepository, TablePort, WalletPort

log = logging.getLogger("bg.matchmaking.lobby")
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: readable aloud
CODE_LENGTH = 6


class LobbyStatus(StrEnum):
    """A table's life in the lobby (the wire's LobbyTable.status carries the value)."""

    OPEN = "open"  # seats to fill
    DEALING = "dealing"  # escrow and match creation under way (the saga)
    DEALT = "dealt"  # the match is on the table service
    CLOSED = "closed"


IN_ANOTHER_MATCH = "in_another_match"  # a close reason: "in_another_match:<player>"
RESTRICTED = "restricted"  # a close reason: "restricted:<player>" (issue 61)
RESTRICTED_WORDS = (
    "after a review of your play, this account plays casual unrated games only: no wagered, "
    "scored or rated match and no tournament. To appeal, write to this server's operators "
    "quoting your player name"
)
LIVE_FOR_S = 6 * 3600  # a table dealt longer ago than this drops off the live list
REQUEST_TTL_S = 86_400  # a client's request id answers its retries this long
PENDING_TTL_S = 30  # a call's claim on its request id before it has seated anyone
WAGERED_HOLD_TTL_S = 7 * 86_400  # longer than any wagered match lasts
PENDING = "pending"
DEAL_RESUME_S = money_keys.DEAL_WINDOW_S  # a deal older than this is settled, not driven on
# Failures after which a create may or may not have happened (the answer was lost).
AMBIGUOUS = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNKNOWN}
)


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


@dataclass
class Table:
    table_id: str
    code: str
    host_id: str
    options: dict[str, Any]  # TableOptions as JSON (protobuf field names)
    public: bool
    player_ids: list[str]
    status: LobbyStatus = LobbyStatus.OPEN
    match_id: str = ""
    fingerprint: str = ""
    close_reason: str = ""
    code_expires_ms: int = 0
    matches: int = 0
    dealing_since_ms: int = 0
    quick: bool = False  # paired by quick match: dealt when full, casual too (no host to Start)
    created_ms: int = field(default_factory=now_ms)
    tournament_id: str = ""  # a tournament's pairing: seated by the director, dealt at once

    def proto_options(self) -> table_pb2.TableOptions:
        from google.protobuf import json_format

        return json_format.ParseDict(self.options, table_pb2.TableOptions())

    @classmethod
    def from_json(cls, raw: str | bytes) -> Table:
        doc = json.loads(raw)
        return cls(**{**doc, "status": LobbyStatus(doc["status"])})

    @property
    def vs_cpu(self) -> bool:
        return any(is_computer(p) for p in self.player_ids)

    @property
    def watchable(self) -> bool:
        """I-35: anyone may watch a public table, and a wagered or scored quick match; a
        player's opt-out (SetPrivacy) is the gateway's to apply, which keeps that preference."""
        if self.public or self.tournament_id:
            return True
        return self.quick and self.options.get("profile") in ("wagered", "scored")


def options_key(opts: table_pb2.TableOptions) -> str:
    """Canonical text of the options: quick match pairs only identical keys."""
    return opts.SerializeToString(deterministic=True).hex()


def ranked_or_staked(opts: table_pb2.TableOptions) -> bool:
    """Play a fair-play restriction keeps a player from (issue 61): diamonds (wagered), the
    boards (scored, rated casual or wagered: trophies and ratings). A tournament's matches too."""
    scored = opts.profile == "scored" and not opts.test_game  # I-19: a test game counts nowhere
    return opts.profile == "wagered" or scored or opts.rated or opts.tournament


def staked(opts: table_pb2.TableOptions) -> bool:
    """A match played for a bet: escrowed at the deal, one at a time per player (W-1). A
    wagered tournament's matches are not: the buy-in was the stake."""
    return opts.profile == "wagered" and not opts.tournament


def _options_json(opts: table_pb2.TableOptions) -> dict[str, Any]:
    from google.protobuf import json_format

    return dict(json_format.MessageToDict(opts, preserving_proto_field_name=True))


def normalize_code(text: str) -> str:
    code = text.strip().rstrip("/").rsplit("/", 1)[-1].upper()
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        raise InvalidArgument("INVALID_CODE", "a party code is 6 letters/digits", field="code")
    return code


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
        self.wallet = wallet
        self.max_open = max_open
        self.tables = tables
        self.code_ttl_s = code_ttl_s

    # -- storage -----------------------------------------------------------------------------

    async def get(self, table_id: str) -> Table:
        raw = await self.store.read(table_id)
        if raw is None:
            raise NotFound("UNKNOWN_TABLE", f"no table {table_id}", field="table_id")
        return Table.from_json(raw)

    async def _update(
        self, table_id: str, change: Callable[[Table], Awaitable[None] | None]
    ) -> Table:
        """Read, change, then write only if the document is still what was read
        (compare-and-set, retried on a race); `change` raises to refuse, mutates to accept."""
        for _ in range(50):
            raw = await self.store.read(table_id)
            if raw is None:
                raise NotFound("UNKNOWN_TABLE", f"no table {table_id}", field="table_id")
            table = Table.from_json(raw)
            result = change(table)
            if result is not None:
                await result
            listed = table.public and table.status == LobbyStatus.OPEN and "" in table.player_ids
            written = await self.store.save_if_unchanged(
                table_id,
                raw,
                json.dumps(asdict(table)),
                table.created_ms if listed else None,
                table.dealing_since_ms if table.status == LobbyStatus.DEALING else None,
            )
            if written:
                return table
        raise ServiceError("BUSY", "the table is busy; try again")

    async def _new_code(self, table_id: str) -> str:
        for _ in range(20):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            if await self.store.reserve_code(code, table_id, self.code_ttl_s):
                return code
        raise ServiceError("BUSY", "could not allocate a party code")

    # -- lobby operations --------------------------------------------------------------------

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
        await self._not_in_another_match(player_id, opts)  # W-1 first: the likelier story
        await self.refuse_restricted(player_id, opts)
        await self._can_cover(player_id, opts)
        vs_cpu = opts.level in CPU_LEVELS
        if not vs_cpu:
            await self._within_cap(player_id)
        table_id = "t" + secrets.token_hex(8)
        code = await self._new_code(table_id)
        seats = [player_id, ""]
        if vs_cpu:
            seats[1] = computer_seat(opts.level, table_id)
        table = Table(
            table_id=table_id,
            code=code,
            host_id=player_id,
            options=_options_json(opts),
            public=public,
            player_ids=seats,
            code_expires_ms=now_ms() + self.code_ttl_s * 1000,
            quick=quick,
        )
        # A game against the computer has no seat to offer: never listed to join, but public it
        # is watchable and listed live like any other (I-35).
        open_since = table.created_ms if table.public and not vs_cpu else None
        await self.store.create(table_id, json.dumps(asdict(table)), open_since)
        await self._bind(retry, table_id)
        await self.store.add_player_table("seated", player_id, table_id)
        if not vs_cpu:
            await self.store.add_player_table("hosting", player_id, table_id)
        await self._leave_other_scored(player_id, table)
        if vs_cpu:
            await self.store.add_bot_table(table_id)
            return await self.deal(table_id)
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
            options=_options_json(opts),
            public=False,
            player_ids=list(players),
            tournament_id=tournament_id,
        )
        if await self.store.create_if_absent(table_id, json.dumps(asdict(table))):
            for p in players:
                await self.store.add_player_table("seated", p, table_id)
                await self._leave_other_scored(p, table)
        found = await self.get(table_id)
        if found.status in (LobbyStatus.OPEN, LobbyStatus.DEALING):
            return await self.deal(table_id)
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
                table = await self.get(table_id)
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

    async def _within_cap(self, player_id: str) -> None:
        """At most `max_open` tables of a player waiting for an opponent (party tables and
        quick-match queues together): a flood of tables from one player is refused."""
        waiting = 0
        for table_id in await self.store.player_tables("hosting", player_id):
            try:
                still = (await self.get(table_id)).status == LobbyStatus.OPEN
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

    async def _can_cover(self, player_id: str, opts: table_pb2.TableOptions) -> None:
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

    async def player_tables(self, player_id: str) -> list[Table]:
        """The tables `player_id` sits at and that are not closed, oldest first."""
        _check_player(player_id)
        out = []
        for table_id in await self.store.player_tables("seated", player_id):
            try:
                table = await self.get(table_id)
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
                table = await self.get(table_id)
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
        found = await self.get(table_id)
        if player_id not in found.player_ids:
            await self._not_in_another_match(player_id, found.proto_options())
            await self.refuse_restricted(player_id, found.proto_options())
            await self._can_cover(player_id, found.proto_options())

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

        table = await self._update(table_id, sit)
        await self._bind(retry, table_id)
        await self.store.add_player_table("seated", player_id, table_id)
        await self._leave_other_scored(player_id, table)
        casual = table.options.get("profile") == "casual"
        if "" not in table.player_ids and (not casual or table.quick):
            return await self.deal(table_id)
        return table

    async def quick_match(
        self, player_id: str, opts: table_pb2.TableOptions, retry: Retry | None = None
    ) -> Table:
        _check_player(player_id)
        player_options(opts)
        await self._not_in_another_match(player_id, opts)  # W-1 first: the likelier story
        await self.refuse_restricted(player_id, opts)
        await self._can_cover(player_id, opts)
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
                        await self._bind(retry, mine.table_id)
                        return mine
                    continue  # someone queued meanwhile: pair with them
                try:
                    table = await self.get(waiting)
                    if table.host_id == player_id:
                        await self.store.push_waiting(queue, waiting)  # my own table still waits
                        if mine is not None:
                            await self._abandon(mine)
                        await self._bind(retry, table.table_id)
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

        await self._update(table.table_id, close)

    async def start(self, player_id: str, table_id: str) -> Table:
        table = await self.get(table_id)
        if table.host_id != player_id:
            raise PermissionDenied("NOT_HOST", "only the host starts the table")
        if table.options.get("profile") != "casual":
            raise ServiceError(
                "NOT_CASUAL", "only casual tables wait for Start; others deal when full"
            )
        if "" in table.player_ids:
            raise ServiceError("NOT_FULL", "two players are needed")
        return await self.deal(table_id)

    async def leave(self, player_id: str, table_id: str) -> Table:
        table = await self.get(table_id)
        if player_id not in table.player_ids:
            raise PermissionDenied("NOT_SEATED", "you do not sit at this table")
        if table.status == LobbyStatus.DEALT:
            await self.tables.leave(table_id, player_id, table.player_ids.index(player_id))
            return table
        if table.status == LobbyStatus.DEALING and self._stale(table):
            await self.deal(table_id)  # undone: the stakes go back, the table closes

        def stand(t: Table) -> None:
            if t.status not in (LobbyStatus.OPEN, LobbyStatus.CLOSED):
                raise ServiceError("DEALING", "the match is being dealt")
            if player_id == t.host_id:
                # Leaving before the deal is free.
                t.status, t.close_reason = LobbyStatus.CLOSED, "host_left"
            else:
                t.player_ids[t.player_ids.index(player_id)] = ""

        return await self._update(table_id, stand)

    async def rematch(self, player_id: str, table_id: str) -> Table:
        table = await self.get(table_id)
        if player_id not in table.player_ids:
            raise PermissionDenied("NOT_SEATED", "you do not sit at this table")
        if not await self.tables.rematch_agreed(table_id, player_id):
            raise ServiceError("NO_REMATCH", "no rematch was agreed (I-32)")
        await self.refuse_restricted(player_id, table.proto_options())

        def reopen(t: Table) -> None:
            if t.status != LobbyStatus.DEALT or t.match_id != table.match_id:
                return  # already re-dealt by the other player's call
            t.status = LobbyStatus.OPEN

        await self._update(table_id, reopen)
        return await self.deal(table_id)

    # -- the deal ----------------------------------------------------------------------------

    async def deal(self, table_id: str) -> Table:
        """Escrow (wagered) then create the match; idempotent per match id. A deal that cannot
        create its match, or that was left half-done for DEAL_RESUME_S, is undone."""

        def claim(t: Table) -> None:
            if t.status == LobbyStatus.OPEN:
                t.matches += 1
                t.status = LobbyStatus.DEALING
                t.match_id = f"{t.table_id}-{t.matches}"
                t.dealing_since_ms = now_ms()

        table = await self._update(table_id, claim)
        if table.status != LobbyStatus.DEALING:
            return table
        opts = table.proto_options()
        if self._stale(table):
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

        table = await self._update(table.table_id, dealt)
        if table.watchable:
            await self.store.mark_live(table.table_id, now_ms())
        if opts.profile == "scored":
            for p in table.player_ids:
                await self.store.set_scored_table(p, table.table_id, 86_400)
        return table

    @staticmethod
    def _stale(table: Table) -> bool:
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

        closed = await self._update(table.table_id, close)
        if staked(table.proto_options()):
            await self._release_wagered(table, table.player_ids)
        return closed

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
                if await self._in_play(other):
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

    async def _in_play(self, ref: str) -> bool:
        """Whether a held wagered match ("<table>|<match>") is being dealt or played."""
        table_id, _, match_id = ref.partition("|")
        try:
            table = await self.get(table_id)
        except NotFound:
            return False
        if table.match_id != match_id:
            return False  # that table has moved on (a rematch): its old match is over
        if table.status == LobbyStatus.DEALING:
            return True
        if table.status == LobbyStatus.DEALT:
            return await self.tables.match_in_play(table_id, match_id)
        return False

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

    async def _not_in_another_match(self, player_id: str, opts: table_pb2.TableOptions) -> None:
        """A wagered table is refused at once to a player sitting at a wagered match in play
        (the deal still decides: W-1)."""
        if opts.profile != "wagered":
            return
        ref = await self.store.held("wagered", player_id, "match")
        if ref is not None and await self._in_play(ref):
            raise ServiceError(
                "IN_ANOTHER_MATCH",
                "you are playing a wagered match: finish it before another",
                table_id=ref.partition("|")[0],
            )

    # -- client request ids ------------------------------------------------------------------

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
                table = await self.get(table_id)
                if table.status == LobbyStatus.DEALING:
                    table = await self.deal(table_id)
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
        await self._bind(retry, table.table_id)
        return table

    async def _bind(self, retry: Retry | None, table_id: str) -> None:
        """The request id answers `table_id` from now on (the player sits there)."""
        if retry is None or not retry.held:
            return
        value = retry.value(table_id)
        await self.store.hold(
            "request", retry.player_id, retry.request_id, value, retry.held, REQUEST_TTL_S
        )
        retry.held = value

    async def sweep_deals(self) -> int:
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

    async def _leave_other_scored(self, player_id: str, table: Table) -> None:
        """I-18: starting another scored game leaves the first."""
        if table.options.get("profile") != "scored":
            return
        other = await self.store.scored_table(player_id)
        if other is None or other == table.table_id:
            return
        try:
            previous = await self.get(other)
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
