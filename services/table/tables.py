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

import dataclasses
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2
from engine import commands as c
from engine import events as e
from engine.machine import Applied, Rejection, apply, new_match, next_deadline
from engine.state import TableState
from engine.view import PlayerView, player_view
from engine.vocabulary import RejectionCode
from services.common.errors import (
    Conflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
)
from services.common.vocabulary import to_proto
from services.table import convert
from services.table.metrics import TableMetrics
from services.table.store import CommitResult, Loaded, TableStore, command_field
from services.table.wallet_port import WalletPort

log = logging.getLogger("bg.table")
MAX_ATTEMPTS = 50
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


def wall_ms() -> int:
    return int(time.time() * 1000)


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


class TableCore:
    def __init__(
        self,
        store: TableStore,
        wallet: WalletPort,
        metrics: TableMetrics | None = None,
        clock_scale: float = 1.0,
        now: Callable[[], int] = wall_ms,
        cache_size: int = 4096,
    ) -> None:
        self.store = store
        self.wallet = wallet
        self.metrics = metrics
        self.clock_scale = clock_scale
        self.now = now
        self.cache = StateCache(cache_size)

    # -- creating ----------------------------------------------------------------------------

    async def create_match(
        self, table_id: str, match_id: str, players: list[str], options: table_pb2.TableOptions
    ) -> tuple[str, int, bool]:
        _check_id("table_id", table_id)
        _check_id("match_id", match_id)
        if len(players) != 2 or players[0] == players[1] or not all(players):
            raise InvalidArgument(
                "INVALID_PLAYERS", "a match has two different players", field="player_ids"
            )
        rules = convert.rules_from_proto(options)
        if self.clock_scale != 1.0:
            rules = rules.scaled(self.clock_scale)
        for _ in range(MAX_ATTEMPTS):
            loaded = await self.store.load(table_id)
            if loaded is not None:
                if loaded.meta["match_id"] == match_id:
                    return loaded.state.match.fingerprint, loaded.seq, True
                if not loaded.state.match.finished:
                    raise Conflict(
                        "TABLE_BUSY", f"table {table_id} is playing match {loaded.meta['match_id']}"
                    )
            prefs = [await self.store.get_prefs(p) for p in players]
            auto = (prefs[0].get("auto_roll") == "1", prefs[1].get("auto_roll") == "1")
            now = self.now()
            applied = new_match(rules, secrets.token_bytes(16), now, auto_roll=auto)
            meta = {"table_id": table_id, "match_id": match_id, "player_ids": players}
            base = Loaded(0, applied.state, meta, 0) if loaded is None else loaded
            result, _ = await self._commit(
                table_id, base, applied, "", now, meta=meta, create=loaded is None
            )
            if result.status == "OK":
                return applied.state.match.fingerprint, result.seq, False
            if result.status == "EXISTS" or result.status == "CONFLICT":
                continue
        raise ServiceError("BUSY", "could not create the match; try again")

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
            if self.metrics:
                self.metrics.commands.labels(cmd.name, "rejected").inc()
                self.metrics.rejections.labels(err.code).inc()
            raise
        if self.metrics:
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
        loaded = self.cache.get(table_id)
        fresh = (
            loaded is None
            or bool(expected_seq and expected_seq > loaded.seq)  # the client saw a newer seq
            or isinstance(cmd, MONEY_COMMANDS)  # never move diamonds on a state that may be old
        )
        if fresh:
            loaded = await self._load(table_id)
        assert loaded is not None
        for _ in range(MAX_ATTEMPTS):
            self._check_seat(loaded, player_id, seat)
            if expected_seq and expected_seq != loaded.seq:
                # A retried command carries the seq it was first sent with: the original result.
                if field and (previous := await self.store.command_result(table_id, field)):
                    return await self._duplicate(table_id, *previous)
                raise ServiceError(
                    "STALE_SEQ",
                    f"the table is at seq {loaded.seq}; the command saw {expected_seq}",
                    seq=str(loaded.seq),
                )
            now = self.now()
            cmd = await self._with_wallet_facts(loaded, cmd)
            out = apply(loaded.state, cmd, now)
            if isinstance(out, Rejection):
                if not fresh:
                    # Refused by a cached state: another replica may have moved the table on
                    # (e.g. the opponent's rematch offer). Judge it by the state in Redis.
                    loaded, fresh = await self._load(table_id), True
                    continue
                if field and (previous := await self.store.command_result(table_id, field)):
                    return await self._duplicate(table_id, *previous)
                raise Rejected(out.code, out.message)
            out = await self._wallet_effects(loaded, cmd, out, now)
            result, events = await self._commit(table_id, loaded, out, field, now)
            if result.status == "OK":
                return Submitted(result.seq, events)
            if result.status == "DUP":
                return await self._duplicate(table_id, result.seq, result.count)
            if result.status == "NO_TABLE":
                self.cache.drop(table_id)
                raise NotFound("UNKNOWN_TABLE", f"no table {table_id}", field="table_id")
            if self.metrics:
                self.metrics.cas_conflicts.inc()
            loaded, fresh = await self._load(table_id), True
        raise ServiceError("BUSY", "the table is too busy; try again")

    async def _duplicate(self, table_id: str, seq: int, count: int) -> Submitted:
        raw = await self.store.events(table_id, seq - count, count)
        events = []
        for _seq, data in raw:
            ev = events_pb2.TableEvent()
            ev.ParseFromString(data)
            events.append(ev)
        return Submitted(seq, events, duplicate=True)

    async def _load(self, table_id: str) -> Loaded:
        """The table as Redis has it now (and so in the cache)."""
        loaded = await self.store.load(table_id)
        if loaded is None:
            self.cache.drop(table_id)
            raise NotFound("UNKNOWN_TABLE", f"no table {table_id}", field="table_id")
        self.cache.put(table_id, loaded)
        return loaded

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

    def _stake(self, loaded: Loaded) -> int:
        m = loaded.state.match
        return m.options.bet * m.cube

    async def _with_wallet_facts(self, loaded: Loaded, cmd: c.Command) -> c.Command:
        """I-4: a double needs both players able to cover the raise; a take checks again."""
        m = loaded.state.match
        if m.options.profile != "wagered":
            return cmd
        players = loaded.meta["player_ids"]
        if isinstance(cmd, c.OfferDouble):
            stake = self._stake(loaded)
            covers = [await self.wallet.balance(p) >= stake for p in players]
            return dataclasses.replace(cmd, both_cover=all(covers))
        if isinstance(cmd, c.Take):
            stake = self._stake(loaded)
            taker, doubler = cmd.seat, 1 - cmd.seat
            return dataclasses.replace(
                cmd,
                taker_covers=await self.wallet.balance(players[taker]) >= stake,
                doubler_covers=await self.wallet.balance(players[doubler]) >= stake,
            )
        return cmd

    async def _wallet_effects(
        self, loaded: Loaded, cmd: c.Command, out: Applied, now: int
    ) -> Applied:
        """Spend for a boost, raise the escrow for a taken double, before committing.

        The wallet keys are derived from the match and the game state, so a retry after a lost
        compare-and-set replays the same wallet operation instead of charging twice.
        """
        m = loaded.state.match
        if m.options.profile != "wagered":
            return out
        match_id = loaded.meta["match_id"]
        players = loaded.meta["player_ids"]
        if isinstance(cmd, c.Boost):
            n = m.boosts_used[cmd.seat] + 1
            key = f"boost:{match_id}:{m.game_no}:{cmd.seat}:{n}"
            await self.wallet.spend(
                key, players[cmd.seat], m.options.boost_cost, BOOST_REASON, match_id
            )
        if isinstance(cmd, c.Take) and any(isinstance(ev, e.DoubleTaken) for ev in out.events):
            new_cube = m.cube * 2
            try:
                await self.wallet.raise_escrow(f"raise:{match_id}:{m.game_no}:{new_cube}", match_id)
            except ServiceError as err:
                if err.code != "INSUFFICIENT_FUNDS":
                    raise
                short = set(err.metadata.get("players", "").split(","))
                retry = dataclasses.replace(
                    cmd,
                    taker_covers=players[cmd.seat] not in short,
                    doubler_covers=players[1 - cmd.seat] not in short,
                )
                again = apply(loaded.state, retry, now)
                if isinstance(again, Rejection):
                    raise Rejected(again.code, again.message) from None
                return again
        return out

    # -- deadlines and presence --------------------------------------------------------------

    async def fire_deadline(self, table_id: str) -> str | None:
        """Apply the table's deadline if it is due; returns its kind, or None."""
        for _ in range(MAX_ATTEMPTS):
            loaded = await self.store.load(table_id)
            if loaded is None:
                await self.store.unschedule(table_id)
                return None
            due = next_deadline(loaded.state.match)
            now = self.now()
            if due is None or due.at_ms > now:
                # Another replica fired it, or the entry is stale: put the clock back in line.
                await self.store.reschedule(
                    table_id, loaded.seq, None if due is None else due.at_ms
                )
                return None
            out = apply(loaded.state, c.Deadline(), now)
            if isinstance(out, Rejection):
                log.error("deadline refused", extra={"table_id": table_id, "code": out.code})
                return None
            result, _ = await self._commit(table_id, loaded, out, "", now)
            if result.status == "OK":
                if self.metrics:
                    self.metrics.clock_lateness.labels(due.kind).observe((now - due.at_ms) / 1000)
                    self.metrics.timeouts.labels(due.kind).inc()
                return due.kind
            if self.metrics:
                self.metrics.cas_conflicts.inc()
        return None

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

    async def record(self, table_id: str, match_id: str) -> dict[str, Any]:
        saved = await self.store.get_record(match_id)
        if saved is not None and saved["table_id"] == table_id:
            return saved
        loaded = await self._load(table_id)
        if loaded.meta["match_id"] != match_id:
            raise NotFound(
                "UNKNOWN_MATCH", f"no match {match_id} on table {table_id}", field="match_id"
            )
        raise ServiceError(
            "MATCH_NOT_OVER", "the record (and the seed) is available once the match ends"
        )

    # -- commit ------------------------------------------------------------------------------

    async def _commit(
        self,
        table_id: str,
        base: Loaded,
        out: Applied,
        field: str,
        now: int,
        meta: dict[str, Any] | None = None,
        create: bool = False,
    ) -> tuple[CommitResult, list[events_pb2.TableEvent]]:
        """One round trip: the script checks `base.seq` and the command id, writes, publishes
        the update. On success the cache holds the new state. `meta` is written when given."""
        new_meta = meta is not None
        meta = meta or base.meta
        m = out.state.match
        events = [
            convert.table_event(ev, base.seq + i + 1, meta, m, now)
            for i, ev in enumerate(out.events)
        ]
        new_seq = base.seq + len(events)
        update = table_pb2.TableUpdate(
            table_id=table_id,
            seq=new_seq,
            events=events,
            views=[
                convert.view_proto(player_view(m, seat), meta, new_seq, m.options)
                for seat in (0, 1)
            ],
        )
        due = next_deadline(m)
        result = await self.store.commit(
            table_id,
            None if create else base.seq,
            out.state,
            None if due is None else due.at_ms,
            field,
            [ev.SerializeToString() for ev in events],
            now,
            meta if new_meta else None,
            update.SerializeToString(),
        )
        if result.status == "OK":
            self.cache.put(table_id, Loaded(result.seq, out.state, meta, base.relayed))
            if m.finished and any(
                isinstance(ev, e.MatchEnded | e.TableClosed) for ev in out.events
            ):
                await self.store.save_record(meta["match_id"], _record(meta, out.state))
        return result, events


def _record(meta: dict[str, Any], state: TableState) -> dict[str, Any]:
    m = state.match
    return {
        "table_id": meta["table_id"],
        "match_id": meta["match_id"],
        "player_ids": meta["player_ids"],
        "seed_hex": state.secret.seed.hex(),
        "fingerprint": m.fingerprint,
        "rolls": [list(r) for r in m.rolls],
        "winner": -1 if m.winner is None else m.winner,
        "end_reason": m.end_reason or "",
        "score": list(m.score),
    }


def _check_id(name: str, value: str) -> None:
    if not value or len(value) > MAX_ID or any(ch in value for ch in "{}: \t\n"):
        raise InvalidArgument(
            "INVALID_ID",
            f"{name} must be 1..{MAX_ID} characters without {{}}: or spaces",
            field=name,
        )
