"""The table core: commands and deadlines through the engine, committed with compare-and-set.

Any replica serves any table. A command is: (state, seq) -> engine.apply -> wallet side effects
(idempotent keys) -> commit(seq). The replica keeps the decoded state of the tables it served
last in a bounded cache keyed by table and seq: when it is fresh, the commit script is the only
Redis round trip. If another replica committed first, the script reports a conflict (it checks
`seq` and the seat's command id atomically); the state is re-read and the step redone, so the
cache can be stale but never wrong. The clock worker fires deadlines through `fire_deadline`, the
same path, so a timeout happens once however many replicas race. Each commit publishes the new
events with both seats' fresh views: clients act on what they are pushed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2
from engine import commands as c
from engine import events as e
from engine.machine import Applied, PendingDeadline, Rejection, apply, new_match, next_deadline
from engine.profiles import RulesOptions
from engine.state import TableState
from engine.view import PlayerView, player_view, player_views, spectator_view
from engine.vocabulary import RejectionCode
from services.common.clock import now_ms
from services.common.errors import (
    Conflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
)
from services.common.metrics import ServiceMetrics
from services.common.store_clock import StoreClock
from services.contracts import money_keys
from services.contracts.seats import is_computer
from services.contracts.shards import shard_of
from services.contracts.vocabulary import to_proto
from services.table import convert
from services.table.metrics import TableMetrics
from services.table.ports import (
    Commit,
    CommitResult,
    CommitStatus,
    Entry,
    Loaded,
    LocalClock,
    MatchRecord,
    Outcome,
    OutcomeState,
    TableMeta,
    TableRepository,
    WalletPort,
    command_field,
)

log = logging.getLogger("bg.table")
MAX_ATTEMPTS = 50
CLOCK_REFUSED = (CommitStatus.CLOCK_AHEAD, CommitStatus.CLOCK_BEHIND)
BOOST_REASON = "boost"
MAX_ID = 64  # characters in a table, match or command id
# Commands whose wallet calls (coverage, a boost's spend, a take's raise) are made before the
# commit: they always start from the state in Redis, not from the replica's cache.
MONEY_COMMANDS = (c.OfferDouble, c.Take, c.Boost)


class StateCache:
    """The decoded state of recently served tables, least recently used out first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, Loaded] = OrderedDict()

    def get(self, table_id: str) -> Loaded | None:
        found = self._items.get(table_id)
        if found is not None:
            self._items.move_to_end(table_id)
        return found

    def put(self, table_id: str, loaded: Loaded) -> None:
        if self.size <= 0:
            return
        current = self._items.get(table_id)
        if current is not None and current.seq > loaded.seq:
            return  # never go back to an older state
        self._items[table_id] = loaded
        self._items.move_to_end(table_id)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def drop(self, table_id: str) -> None:
        self._items.pop(table_id, None)

    def keep_shards(self, shards: set[int]) -> None:
        """Forget the tables of every other shard (a lease moved: another replica owns them)."""
        for table_id in [t for t in self._items if shard_of(t) not in shards]:
            del self._items[table_id]


class Rejected(ServiceError):
    """The engine refused the command (its code: NOT_YOUR_TURN, ILLEGAL_STEP, ...)."""

    def __init__(self, code: RejectionCode, message: str) -> None:
        super().__init__(code.value, message)
        self.rejection = to_proto(code, RejectionCode)


@dataclass(frozen=True)
class Submitted:
    seq: int
    events: list[events_pb2.TableEvent]
    duplicate: bool = False


T = TypeVar("T")


@dataclass(frozen=True)
class Change:
    """What a step decided: the engine's transition of `base`, to commit."""

    base: Loaded
    out: Applied
    now: int
    field: str = ""  # the command's id field ("": a clock's or a create)
    meta: TableMeta | None = None  # written when given (a new match)
    create: bool = False  # no table yet
    deadline: PendingDeadline | None = None  # the deadline this change applies


@dataclass(frozen=True)
class Done(Generic[T]):
    """The step's answer without a commit."""

    value: T


class Reread:
    """The step wants the table as Redis has it (it decided on a cached state)."""


REREAD = Reread()
Step = Change | Done[T] | Reread


def _present(loaded: Loaded | None, table_id: str) -> Loaded:
    if loaded is None:
        raise NotFound("UNKNOWN_TABLE", f"no table {table_id}", field="table_id")
    return loaded


class TableCore:
    def __init__(
        self,
        store: TableRepository,
        wallet: WalletPort,
        metrics: TableMetrics | None = None,  # None: counted in a registry of its own
        clock_scale: float = 1.0,
        now: Callable[[], int] = now_ms,
        cache_size: int = 4096,
        on_commit: Callable[[str, list[Entry]], None] | None = None,
    ) -> None:
        self.store = store
        self.wallet = wallet
        self.metrics = metrics or TableMetrics(ServiceMetrics("table"))
        self.clock_scale = clock_scale
        self.now = now
        self.cache = StateCache(cache_size)
        # Told of every commit's events here (the relay sends them at once, from memory).
        self.on_commit = on_commit
        # This process's clock worker, if one runs here: told directly of the deadlines of the
        # shards it looks after (a commit publishes a wake-up only for the others' shards).
        self.local_clock: LocalClock | None = None
        self._captures: set[asyncio.Task[None]] = set()  # holds spent after their answer

    # -- creating ----------------------------------------------------------------------------

    async def create_match(
        self, table_id: str, match_id: str, players: list[str], rules: RulesOptions
    ) -> tuple[str, int, bool]:
        _check_id("table_id", table_id)
        _check_id("match_id", match_id)
        if len(players) != 2 or players[0] == players[1] or not all(players):
            raise InvalidArgument(
                "INVALID_PLAYERS", "a match has two different players", field="player_ids"
            )
        if self.clock_scale != 1.0:
            rules = rules.scaled(self.clock_scale)

        async def step(loaded: Loaded | None, fresh: bool) -> Step[tuple[str, int, bool]]:
            if loaded is not None:
                if loaded.meta["match_id"] == match_id:
                    return Done((loaded.state.match.fingerprint, loaded.seq, True))
                if not loaded.state.match.finished:
                    raise Conflict(
                        "TABLE_BUSY", f"table {table_id} is playing match {loaded.meta['match_id']}"
                    )
            prefs = [await self.store.get_prefs(p) for p in players]
            auto = (prefs[0].get("auto_roll") == "1", prefs[1].get("auto_roll") == "1")
            now = self.now()
            applied = new_match(
                rules,
                secrets.token_bytes(16),
                now,
                auto_roll=auto,
                absent=_absent_at_deal(loaded, players),
            )
            meta = TableMeta(table_id=table_id, match_id=match_id, player_ids=list(players))
            base = Loaded(0, applied.state, meta, 0) if loaded is None else loaded
            return Change(base, applied, now, meta=meta, create=loaded is None)

        async def done(change: Change, result: CommitResult, _: Any) -> tuple[str, int, bool]:
            return change.out.state.match.fingerprint, result.seq, False

        return await self._transition(table_id, step, done, "could not create the match")

    # -- commands ----------------------------------------------------------------------------

    async def submit(
        self,
        table_id: str,
        player_id: str,
        seat: int,
        command_id: str,
        expected_seq: int,
        cmd: c.Command,
    ) -> Submitted:
        try:
            result = await self._submit(table_id, player_id, seat, command_id, expected_seq, cmd)
        except ServiceError as err:
            self.metrics.commands.labels(cmd.name, "rejected").inc()
            self.metrics.rejections.labels(err.code).inc()
            raise
        self.metrics.commands.labels(cmd.name, "duplicate" if result.duplicate else "ok").inc()
        return result

    async def _submit(
        self,
        table_id: str,
        player_id: str,
        seat: int,
        command_id: str,
        expected_seq: int,
        cmd: c.Command,
    ) -> Submitted:
        _check_id("table_id", table_id)
        if len(command_id) > MAX_ID:
            raise InvalidArgument(
                "MALFORMED", f"command_id is at most {MAX_ID} characters", field="command_id"
            )
        field = command_field(seat, command_id)
        cached = self.cache.get(table_id)
        if cached is not None and (
            bool(expected_seq and expected_seq > cached.seq)  # the client saw a newer seq
            or isinstance(cmd, MONEY_COMMANDS)  # never move diamonds on a state that may be old
        ):
            cached = None

        async def original() -> Submitted | None:
            """A command applied before (a retry): its original result."""
            if field and (previous := await self.store.command_result(table_id, field)):
                return await self._duplicate(table_id, *previous)
            return None

        async def step(loaded: Loaded | None, fresh: bool) -> Step[Submitted]:
            loaded = _present(loaded, table_id)
            self._check_seat(loaded, player_id, seat)
            if expected_seq and expected_seq != loaded.seq:
                # A retried command carries the seq it was first sent with.
                if previous := await original():
                    return Done(previous)
                raise ServiceError(
                    "STALE_SEQ",
                    f"the table is at seq {loaded.seq}; the command saw {expected_seq}",
                    seq=str(loaded.seq),
                )
            now = self.now()
            out = apply(loaded.state, await self._with_wallet_facts(loaded, cmd, now), now)
            if isinstance(out, Rejection):
                if not fresh:
                    # Refused by a cached state: another replica may have moved the table on
                    # (e.g. the opponent's rematch offer). Judge it by the state in Redis.
                    return REREAD
                if previous := await original():
                    return Done(previous)
                raise Rejected(out.code, out.message)
            return Change(loaded, out, now, field=field)

        async def done(
            change: Change, result: CommitResult, update: table_pb2.TableUpdate
        ) -> Submitted:
            if result.status is CommitStatus.DUP:
                return await self._duplicate(table_id, result.seq, result.count)
            self._capture_in_background(change.base, change.out)
            return Submitted(result.seq, list(update.events))

        return await self._transition(table_id, step, done, "the table is too busy", cached)

    async def _duplicate(self, table_id: str, seq: int, count: int) -> Submitted:
        raw = await self.store.events(table_id, seq - count, count)
        events = []
        for _seq, data in raw:
            ev = events_pb2.TableEvent()
            ev.ParseFromString(data)
            events.append(ev)
        return Submitted(seq, events, duplicate=True)

    async def _read(self, table_id: str) -> Loaded | None:
        """The table as Redis has it now (and so in the cache)."""
        loaded = await self.store.load(table_id)
        if loaded is None:
            self.cache.drop(table_id)
        else:
            self.cache.put(table_id, loaded)
        return loaded

    async def _load(self, table_id: str) -> Loaded:
        return _present(await self._read(table_id), table_id)

    async def _transition(
        self,
        table_id: str,
        step: Callable[[Loaded | None, bool], Awaitable[Step[T]]],
        done: Callable[[Change, CommitResult, table_pb2.TableUpdate], Awaitable[T]],
        busy: str,
        cached: Loaded | None = None,
    ) -> T:
        """One change of a table: `step` decides on the table as read (None: no table; `fresh`:
        read from Redis, not the cache) and the change is committed with compare-and-set; a
        conflict re-reads and decides again. `done` makes the answer of a commit (OK, or DUP: the
        command was applied before). Counts the conflicts; keeps the cache."""
        loaded, fresh = cached, False
        if loaded is None:
            loaded, fresh = await self._read(table_id), True
        for _ in range(MAX_ATTEMPTS):
            decision = await step(loaded, fresh)
            if isinstance(decision, Done):
                return decision.value
            if isinstance(decision, Change):
                result, update = await self._commit(table_id, decision)
                if result.status is CommitStatus.OK or result.status is CommitStatus.DUP:
                    return await done(decision, result, update)
                if result.status in CLOCK_REFUSED:  # decide again on the store's time
                    self.metrics.clock_refusals.labels(result.status.value).inc()
                    await self._store_time(result)
                    continue
                if result.status is not CommitStatus.NO_TABLE:  # read again: the step decides
                    self.metrics.cas_conflicts.inc()  # CONFLICT, or EXISTS for a create
            loaded, fresh = await self._read(table_id), True
        raise ServiceError("BUSY", f"{busy}; try again")

    async def _store_time(self, refused: CommitResult) -> None:
        """The store refused our time (I-40): bring the estimate back to its clock."""
        clock = self.now
        if not isinstance(clock, StoreClock):
            return  # the wall clock (one host, tests): read afresh at the next decision
        log.warning("the store refused this replica's time", extra={"how": refused.status.value})
        if refused.status is CommitStatus.CLOCK_AHEAD:
            clock.stalled()
            await clock.sync()
        else:
            clock.seen(refused.seq)

    def _check_seat(self, loaded: Loaded, player_id: str, seat: int) -> None:
        players = loaded.meta["player_ids"]
        if seat not in (0, 1):
            raise InvalidArgument("BAD_SEAT", f"seat must be 0 or 1, got {seat}", field="seat")
        if players[seat] != player_id:
            raise PermissionDenied("NOT_YOUR_SEAT", f"{player_id} does not sit in seat {seat}")

    def seat_of(self, loaded: Loaded, player_id: str) -> int:
        players = loaded.meta["player_ids"]
        if player_id not in players:
            raise PermissionDenied("NOT_SEATED", f"{player_id} does not sit at this table")
        return int(players.index(player_id))

    # -- money around commands (wagered) -----------------------------------------------------

    async def _with_wallet_facts(self, loaded: Loaded, cmd: c.Command, now: int) -> c.Command:
        """wagered: hold what a command will spend before it is committed (the keys come from
        the match and the game state, so a retry after a lost compare-and-set replays the same
        hold). OfferDouble holds both players' raise (I-4: an offer needs both to cover it); a
        Take then covers by construction and needs no wallet call, so a wallet outage can never
        turn a take into a drop; Boost holds its price. A hold whose command never commits is
        released when the match settles or is refunded."""
        m = loaded.state.match
        if not m.options.staked:
            return cmd
        if isinstance(cmd, c.Take):
            return dataclasses.replace(cmd, taker_covers=True, doubler_covers=True)
        if not isinstance(cmd, c.OfferDouble | c.Boost):
            return cmd
        if isinstance(apply(loaded.state, cmd, now), Rejection):
            return cmd  # refused by the rules anyway: hold nothing
        match_id = loaded.meta["match_id"]
        if isinstance(cmd, c.OfferDouble):
            cube = m.cube * 2
            try:
                await self.wallet.hold_raise(
                    money_keys.raise_hold(match_id, m.game_no, cube), match_id, cube
                )
            except ServiceError as err:
                if err.code != "INSUFFICIENT_FUNDS":
                    raise
                return dataclasses.replace(cmd, both_cover=False)
            return dataclasses.replace(cmd, both_cover=True)
        n = m.boosts_used[cmd.seat] + 1
        player = loaded.meta["player_ids"][cmd.seat]
        await self.wallet.hold_spend(
            money_keys.boost_hold(match_id, m.game_no, cmd.seat, n),
            player,
            m.options.boost_cost,
            BOOST_REASON,
            match_id,
        )
        return cmd

    def _capture_in_background(self, loaded: Loaded, out: Applied) -> None:
        """The holds a commit used are captured after its answer, not before: a take waited
        3 s for its answer while the wallet was cut off from its database (issue 58's partition
        suite), on a capture that is best effort anyway."""
        if not out.state.match.options.staked:
            return
        task = asyncio.create_task(self._capture_held(loaded, out))
        self._captures.add(task)
        task.add_done_callback(self._captures.discard)

    async def captures_done(self) -> None:
        """Wait for the captures under way (a test's check of the wallet; a replica's stop)."""
        await asyncio.gather(*self._captures)

    async def _capture_held(self, loaded: Loaded, out: Applied) -> None:
        """After the commit: spend the holds its events used. Best effort: the wallet's consumer
        captures the same holds from the events, and settlement resolves any still open."""
        m = out.state.match
        if not m.options.staked:
            return
        match_id = loaded.meta["match_id"]
        keys = [
            money_keys.raise_hold(match_id, m.game_no, ev.cube)
            for ev in out.events
            if isinstance(ev, e.DoubleTaken)
        ] + [
            money_keys.boost_hold(match_id, m.game_no, ev.seat, m.boosts_used[ev.seat])
            for ev in out.events
            if isinstance(ev, e.BoostApplied)
        ]
        for key in keys:
            try:
                await self.wallet.capture(key)
            except Exception as exc:  # the other paths capture it
                log.info("capture deferred", extra={"hold": key, "error": repr(exc)[:200]})

    # -- deadlines and presence --------------------------------------------------------------

    async def fire_deadline(self, table_id: str) -> str | None:
        """Apply the table's deadline if it is due; returns its kind, or None."""

        async def step(loaded: Loaded | None, fresh: bool) -> Step[str | None]:
            if loaded is None:
                await self.store.unschedule(table_id)
                return Done(None)
            due = next_deadline(loaded.state.match)
            now = self.now()
            if due is None or due.at_ms > now:
                # Another replica fired it, or the entry is stale: put the clock back in line.
                await self.store.reschedule(
                    table_id, loaded.seq, None if due is None else due.at_ms
                )
                return Done(None)
            out = apply(loaded.state, c.Deadline(), now)
            if isinstance(out, Rejection):
                log.error("deadline refused", extra={"table_id": table_id, "code": out.code})
                return Done(None)
            return Change(loaded, out, now, deadline=due)

        async def done(change: Change, _result: CommitResult, _update: Any) -> str | None:
            due = change.deadline
            assert due is not None
            self.metrics.clock_lateness.labels(due.kind).observe((change.now - due.at_ms) / 1000)
            self.metrics.timeouts.labels(due.kind).inc()
            return due.kind

        try:
            return await self._transition(table_id, step, done, "the clock lost every race")
        except ServiceError as err:
            if err.code != "BUSY":
                raise
            return None  # still due: the clock worker comes back to it

    async def operator_close(self, table_id: str) -> int:
        """Close a stuck table undecided; returns the closing seq. The match_closed event is
        what refunds every stake (I-10: the wallet consumes it; the reconciler backs it up)."""
        _check_id("table_id", table_id)

        async def step(loaded: Loaded | None, fresh: bool) -> Step[int]:
            loaded = _present(loaded, table_id)
            now = self.now()
            out = apply(loaded.state, c.OperatorClose(), now)
            if isinstance(out, Rejection):
                raise Rejected(out.code, out.message)
            return Change(loaded, out, now)

        async def done(_change: Change, result: CommitResult, _update: Any) -> int:
            return result.seq

        return await self._transition(table_id, step, done, "the table is too busy")

    async def presence(self, table_id: str, player_id: str, connected: bool) -> int:
        loaded = await self._load(table_id)
        seat = self.seat_of(loaded, player_id)
        cmd: c.Command = c.Reconnect(seat) if connected else c.Disconnect(seat)
        try:
            return (await self.submit(table_id, player_id, seat, "", 0, cmd)).seq
        except Rejected as err:
            if err.code in ("ALREADY_AWAY", "NOT_AWAY", "MATCH_OVER"):
                return loaded.seq  # already so: presence reports are idempotent
            raise

    async def set_auto_roll(self, player_id: str, on: bool) -> None:
        _check_id("player_id", player_id)
        await self.store.set_prefs(player_id, auto_roll="1" if on else "0")

    # -- reads -------------------------------------------------------------------------------

    async def view(self, table_id: str, player_id: str) -> tuple[Loaded, PlayerView]:
        loaded = await self._load(table_id)
        seat = self.seat_of(loaded, player_id)
        return loaded, player_view(loaded.state.match, seat)

    async def spectator_view(self, table_id: str) -> tuple[Loaded, PlayerView]:
        """I-35: what anyone may see; the gateway decides who may watch."""
        loaded = await self._load(table_id)
        return loaded, spectator_view(loaded.state.match)

    async def record(self, table_id: str, match_id: str) -> MatchRecord:
        saved = await self.store.get_record(table_id, match_id)
        if saved is not None:
            return saved
        loaded = await self._load(table_id)
        if loaded.meta["match_id"] != match_id:
            raise NotFound(
                "UNKNOWN_MATCH", f"no match {match_id} on table {table_id}", field="match_id"
            )
        raise ServiceError(
            "MATCH_NOT_OVER", "the record (and the seed) is available once the match ends"
        )

    async def outcome(self, table_id: str, match_id: str) -> Outcome:
        """How a match stands, from its record (written with the match's end) or the live
        table: what the wallet's reconciler needs to settle, refund or wait."""
        _check_id("table_id", table_id)
        record = await self.store.get_record(table_id, match_id)
        if record is not None:
            winner, players, cube, boosts = (
                record.winner,
                record.player_ids,
                record.cube,
                record.boosts,
            )
        else:
            loaded = await self.store.load(table_id)
            if loaded is None or loaded.meta["match_id"] != match_id:
                return Outcome(OutcomeState.UNKNOWN)
            m = loaded.state.match
            if not m.finished:
                return Outcome(OutcomeState.PLAYING)
            # The record expired before the table: its state still says how it ended.
            winner = -1 if m.winner is None else m.winner
            players = tuple(loaded.meta["player_ids"])
            cube, boosts = max((g.cube for g in m.games), default=m.cube), ()
        applied = tuple(money_keys.boost_hold(match_id, *b) for b in boosts)
        if winner < 0:
            return Outcome(OutcomeState.CLOSED, applied_boosts=applied)
        return Outcome(OutcomeState.ENDED, players[winner], cube, applied)

    # -- commit ------------------------------------------------------------------------------

    async def _commit(
        self, table_id: str, change: Change
    ) -> tuple[CommitResult, table_pb2.TableUpdate]:
        """One round trip: the script checks the base's seq and the command id, writes,
        publishes the update. On success the cache holds the new state."""
        base, out, now = change.base, change.out, change.now
        meta = change.meta or base.meta
        m = out.state.match
        events = [
            convert.table_event(ev, base.seq + i + 1, meta, m, now)
            for i, ev in enumerate(out.events)
        ]
        new_seq = base.seq + len(events)
        ends = m.finished and any(isinstance(ev, e.MatchEnded | e.TableClosed) for ev in out.events)
        record = None
        if ends:  # the end carries every move of the match, and the record is written with it
            moves = await self._match_moves(table_id, base.seq, meta["match_id"], events)
            for ev in events:
                kind = ev.WhichOneof("body")
                if kind in ("match_ended", "match_closed"):
                    getattr(ev, kind).moves.extend(moves)
            record = _record(meta, out.state, moves)
        due = next_deadline(m)
        update = table_pb2.TableUpdate(
            table_id=table_id,
            seq=new_seq,
            events=events,
            views=[convert.view_proto(v, meta, new_seq, m.options) for v in player_views(m, due)],
        )
        shard = shard_of(table_id)
        local = self.local_clock
        here = local is not None and local.looks_after(shard)
        data = [ev.SerializeToString() for ev in events]
        kinds = [str(ev.WhichOneof("body")) for ev in events]
        commit = Commit(
            table_id,
            None if change.create else base.seq,
            out.state,
            None if due is None else due.at_ms,
            change.field,
            data,
            now,
            meta=change.meta,
            update=update.SerializeToString(),
            record=record,
            kinds=kinds,
            wake=not here,
        )
        result = await self.store.commit(commit)
        if result.status is CommitStatus.OK:
            self.cache.put(table_id, Loaded(result.seq, out.state, meta, base.relayed))
            if result.sooner and here and due is not None:
                await self._sooner(shard, due.at_ms)
            if events and self.on_commit is not None:
                first = result.seq - len(events) + 1
                self.on_commit(
                    table_id,
                    [
                        Entry(first + i, data[i], kinds[i], len(events) if i == 0 else 0)
                        for i in range(len(events))
                    ],
                )
        return result, update

    async def _sooner(self, shard: int, at_ms: int) -> None:
        """Tell the clock worker that looks after `shard` of its new earliest deadline: this
        process's, or, if the shard's lease moved while the commit ran, the others by the
        wake-up channel (the commit published none)."""
        local = self.local_clock
        if local is not None and local.looks_after(shard):
            local.sooner(shard, at_ms)
        else:
            await self.store.wake(shard, at_ms)

    async def _match_moves(
        self,
        table_id: str,
        upto_seq: int,
        match_id: str,
        new_events: list[events_pb2.TableEvent],
    ) -> list[events_pb2.TableEvent]:
        """Every move of the match (RECORD_KINDS), from the table's stream up to `upto_seq` and
        the commit's own events: read once, when the match ends."""
        moves: list[events_pb2.TableEvent] = []
        after = 0
        while after < upto_seq:
            batch = await self.store.events(table_id, after, 1000)
            if not batch:
                break
            for seq, data in batch:
                if seq > upto_seq:
                    break
                ev = events_pb2.TableEvent()
                ev.ParseFromString(data)
                if ev.match_id == match_id and ev.WhichOneof("body") in RECORD_KINDS:
                    moves.append(ev)
            after = batch[-1][0]
        return moves + [ev for ev in new_events if ev.WhichOneof("body") in RECORD_KINDS]


# The events a match record keeps as its move list (clock chatter, presence and views are not).
RECORD_KINDS = frozenset(
    {
        "game_started",
        "opening_roll",
        "dice_rolled",
        "turn_ended",
        "turn_passed",
        "timed_out",
        "boost_applied",
        "double_offered",
        "double_taken",
        "double_dropped",
        "double_withdrawn",
        "turn_taken_back",
        "away_expired",
        "game_ended",
    }
)


def _record(meta: TableMeta, state: TableState, moves: list[events_pb2.TableEvent]) -> MatchRecord:
    m = state.match
    boosts = tuple(
        (ev.boost_applied.game_no, ev.boost_applied.seat, ev.boost_applied.boost_no)
        for ev in moves
        if ev.WhichOneof("body") == "boost_applied"
    )
    return MatchRecord(
        table_id=meta["table_id"],
        match_id=meta["match_id"],
        player_ids=tuple(meta["player_ids"]),
        profile=m.options.profile,
        seed_hex=state.secret.seed.hex(),
        fingerprint=m.fingerprint,
        rolls=m.rolls,
        winner=-1 if m.winner is None else m.winner,
        end_reason=m.end_reason or "",
        score=tuple(m.score),
        cube=max((g.cube for g in m.games), default=m.cube),
        boosts=boosts,
    )


def _check_id(name: str, value: str) -> None:
    if not value or len(value) > MAX_ID or any(ch in value for ch in "{}: \t\n"):
        raise InvalidArgument(
            "INVALID_ID",
            f"{name} must be 1..{MAX_ID} characters without {{}}: or spaces",
            field=name,
        )


def _absent_at_deal(loaded: Loaded | None, players: list[str]) -> tuple[bool, bool]:
    """Who is away from the deal (I-41): on a new table nobody has a Play stream yet (one opens
    only once a match exists), so every person is, until their first stream reports them back;
    a rematch keeps each player's presence at the last match's end. The computer is never away
    (the bots' streams come and go with their lease)."""
    before = list(loaded.meta["player_ids"]) if loaded is not None else []

    def absent(player: str) -> bool:
        if is_computer(player):
            return False
        if loaded is not None and player in before:
            return loaded.state.match.away_since_ms[before.index(player)] is not None
        return True

    return (absent(players[0]), absent(players[1]))
