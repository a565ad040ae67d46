"""Relays every table's Redis stream to the Kafka topic `table-events`, at least once: one record
per commit (services/contracts/event_records.py), keyed by table id.

Tables with unrelayed events sit in their shard's `relay:{s<n>}` set. Each pass takes the tables
this replica committed since the last pass (the core tells it: the events leave at once) and,
every SWEEP_S, every pending table of the shards it looks after (the tables other replicas
committed and died before relaying). It takes a short lease on each table (so one relay at a
time publishes a table, in order), reads the streams after each table's `relayed` pointer,
publishes in order keyed by table id, waits for Kafka's acknowledgements, then moves the
pointers; every step is one pipelined round trip for the whole batch. A crash after publishing
and before the pointer moves re-publishes the same events, in the same order: consumers dedupe on
(table_id, seq).

The records go through the event log port (services/common/log_port.py), each following the
receipt of its table's last record (a log that moves on in segments keeps a table's records in
order so; one that cannot take them yet answers WAIT). A table whose last receipt is not KEPT
remembers it and stays unconfirmed until the log says every group has read it: every CONFIRM_S
the unconfirmed tables are checked, read ones are confirmed (`consumed`), and those the log lost
are relayed again from `consumed`. On production Kafka every receipt is KEPT: no table is ever
unconfirmed, and the same code runs.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from asyncio import FIRST_COMPLETED
from collections.abc import Callable, Iterable

from services.common.backoff import Backoff, pause
from services.common.clock import now_ms
from services.common.log_port import KEPT, Outgoing, Publisher, Receipt, Unsent, Verdict
from services.contracts.event_records import commit_record
from services.contracts.shards import shard_of
from services.contracts.topics import TABLE_EVENTS
from services.table.adapters.redis_store import RelayState, TableStore
from services.table.metrics import TableMetrics
from services.table.ports import Entry
from services.table.shard_leases import AllShards, ShardLeases

log = logging.getLogger("bg.table.relay")
LEASE_MS = 10_000
BACKLOG = 1000  # events in one pass that mean "behind": go again without waiting
# Look at every owned shard's pending tables this often: only tables whose committing replica
# died before relaying them (or whose pass failed) need it; the rest leave at once.
SWEEP_S = 5.0
PER_SHARD = 50  # pending tables read per shard in one sweep
# How often unconfirmed tables are checked (a log that may forget: embedded mode; on Kafka none
# is ever unconfirmed): each check asks every reading group for its offsets, ~1% of a loaded
# replica's CPU a second; a table the log lost is sent again at the next check (or its next
# commit), its events late by as much, never lost.
CONFIRM_S = 1.0
# How often every owned shard is checked for unconfirmed tables; in between only the shards this
# relay marked are (a scan of all 512 shards a replica owns at every check was half an idle
# replica's CPU). The full check finds what another replica marked before a shard changed hands.
CONFIRM_ALL_S = 10.0
# With nothing committed here, a relay sleeps until a commit wakes it, at most this long (so a
# change of its shards is still swept at once, and confirmations keep their pace).
IDLE_S = 0.25
# Events a relay keeps from this replica's commits until they are sent, per table and in all;
# past either, a table's are read back from its stream instead (a relay that fell behind: Kafka
# away, say, with every table still playing).
FRESH_MAX = 500
FRESH_TOTAL_MAX = 20_000
LAG_S = 1.0  # how often the relay's lag is read (one script call over the owned shards)


def records(entries: list[Entry]) -> list[tuple[int, bytes, list[tuple[str, bytes]]]]:
    """One record per commit: (seq of its last event, value, headers). Events written before
    commits were marked go one record each."""
    out: list[tuple[int, bytes, list[tuple[str, bytes]]]] = []
    i = 0
    while i < len(entries):
        n = max(1, entries[i].opens)
        group = entries[i : i + n]
        value, headers = commit_record([e.data for e in group], [e.kind for e in group])
        out.append((group[-1].seq, value, headers))
        i += len(group)
    return out


class EventRelay:
    def __init__(
        self,
        store: TableStore,
        publisher: Publisher,
        metrics: TableMetrics | None = None,
        interval_s: float = 0.05,
        leases: ShardLeases | AllShards | None = None,
        now: Callable[[], int] = now_ms,
        sweep_s: float = SWEEP_S,
    ) -> None:
        self.store = store
        self.publisher = publisher
        self.metrics = metrics
        self.interval_s = interval_s
        self.now = now  # the generations go by it: the store's clock (a StoreClock) in a replica
        self.sweep_s = sweep_s
        self.token = secrets.token_hex(8)
        self.leases = leases or AllShards()
        self._committed: set[str] = set()
        self._swept = 0.0
        self._confirmed = 0.0
        self._owned: list[int] = []
        self._marked: set[int] = set()  # shards that may hold unconfirmed tables (see confirm)
        self._checked_all = 0.0
        self._checked_owned: list[int] = []
        # Tables held back (the log answered WAIT) and their last records' receipts: until a
        # check finds those read, their streams are not read again each pass.
        self._held: dict[str, Receipt] = {}
        self._woken = asyncio.Event()  # set by a commit here
        # This replica's commits' events, in seq order, not yet sent: a pass sends them from
        # here when they follow the table's relayed pointer (no read of the stream it wrote).
        self._fresh: dict[str, list[Entry]] = {}
        self._kept = 0  # events in `_fresh`

    def committed(self, table_id: str, entries: list[Entry] | None = None) -> None:
        """The core committed `entries` to this table: relay it in the next pass."""
        self._committed.add(table_id)
        if entries:
            kept = self._fresh.pop(table_id, [])
            self._kept -= len(kept)
            gap = bool(kept) and kept[-1].seq + 1 != entries[0].seq  # another replica's between
            if gap or len(kept) >= FRESH_MAX:
                kept = []  # its stream is read instead
            if self._kept + len(kept) + len(entries) <= FRESH_TOTAL_MAX:
                kept.extend(entries)
                self._fresh[table_id] = kept
                self._kept += len(kept)
        self._woken.set()

    def _from_memory(self, pointers: dict[str, int]) -> dict[str, list[Entry]]:
        """The tables whose events after their pointer this relay holds, every one of them:
        the commits it saw here follow the pointer with no gap. (Events another replica
        committed after them stay in the table's pending set: its own relay, or a sweep,
        sends them after these, in order.)"""
        found: dict[str, list[Entry]] = {}
        for table_id, relayed in pointers.items():
            kept = self._fresh.get(table_id)
            if not kept:
                continue
            after = [e for e in kept if e.seq > relayed]
            if after and after[0].seq == relayed + 1 and after[0].opens:
                found[table_id] = after
        return found

    def _sent(self, acked: dict[str, int]) -> None:
        """Forget the kept events up to each table's new pointer."""
        for table_id, upto in acked.items():
            kept = self._fresh.pop(table_id, None)
            if kept is None:
                continue
            rest = [e for e in kept if e.seq > upto]
            self._kept -= len(kept) - len(rest)
            if rest:
                self._fresh[table_id] = rest

    async def run_once(self, sweep: bool = True) -> int:
        """One pass over the tables committed here since the last pass and, with `sweep`, every
        pending table of the owned shards: at most four Redis round trips however many tables
        (the pending sets, leases and pointers, the streams of the tables whose events this
        relay does not hold, the acknowledgements with the leases' end), two in the steady
        state (every event committed here)."""
        tables = set(self._committed)
        self._committed.clear()
        if sweep:
            self._swept = time.monotonic()
            pending = await self.store.pending_tables(self.leases.owned(), PER_SHARD)
            tables.update(table_id for table_id, _ in pending)
        if not tables:
            return 0
        owned = await self.store.lease_for_relay(sorted(tables), self.token, LEASE_MS)
        # Tables another relay holds: try again next pass (it may have read before our commit).
        self._committed.update(tables - owned.keys())
        if not owned:
            return 0
        released = False
        try:
            at_ms = self.now()
            waiting = await self._still_held(owned)
            self._committed.update(waiting)  # their turn comes when their last records are read
            sending = {t: s.relayed for t, s in owned.items() if t not in waiting}
            streams = self._from_memory(sending)
            unread = {t: n for t, n in sending.items() if t not in streams}
            if unread:
                streams.update(await self.store.events_after(unread))
            out: list[Outgoing] = []
            last_seqs: list[tuple[str, int]] = []
            for table_id, entries in streams.items():
                follows = owned[table_id].receipt
                for last_seq, value, headers in records(entries):
                    out.append(Outgoing(TABLE_EVENTS, table_id.encode(), value, headers, follows))
                    last_seqs.append((table_id, last_seq))
            placed = await self.publisher.publish(out, at_ms) if out else []
            # A table's records share one fate (one `follows`): sent, or none of them.
            unsent: dict[str, Unsent] = {}
            acked = dict(sending)
            where: dict[str, Receipt] = {}  # the receipts to confirm later (none KEPT)
            for (table_id, last_seq), p in zip(last_seqs, placed, strict=True):
                if isinstance(p, Unsent):
                    unsent[table_id] = p
                    continue
                acked[table_id] = last_seq
                if p != KEPT:
                    where[table_id] = p
            for table_id in unsent:
                del acked[table_id]
            lost = [t for t, why in unsent.items() if why is Unsent.RESEND]
            if lost:  # relayed again from what every group had read, before anything new
                await self.store.replay_many(lost, at_ms)
            # Waiting ones' turn comes when their last records are read; lost ones go again.
            self._committed.update(unsent)
            for table_id in sending:
                follows = owned[table_id].receipt
                if unsent.get(table_id) is Unsent.WAIT and follows != KEPT:
                    self._held[table_id] = follows
                else:
                    self._held.pop(table_id, None)
            # Every leased table's lease ends with the acknowledgements; those not sent move no
            # pointer (0): a lost table's was just put back to what every group read.
            pointers = dict.fromkeys(owned, 0) | acked
            await self.store.relay_ack_many(pointers, where, at_ms, self.token)
            released = True
            self._sent(acked)
            self._marked.update(shard_of(t) for t in where)
            moved = sum(len(streams[t]) for t in acked if t in streams)
            if self.metrics:
                self.metrics.relayed.inc(moved)
            return moved
        finally:
            if not released:
                await self.store.release_relay(list(owned), self.token)

    async def _still_held(self, owned: dict[str, RelayState]) -> set[str]:
        """Of the tables a pass held back, those whose last records are still unread where they
        went: one check of their placements, no read of their streams (with a group lagging
        generations behind, every table it has not read is held: reading each one's stream
        every pass would load Redis just when a consumer is behind)."""
        held = {t: p for t, p in self._held.items() if t in owned}
        if not held:
            return set()
        tables = [t for t in held if owned[t].receipt == held[t]]
        verdicts = await self.publisher.check(TABLE_EVENTS, [held[t] for t in tables])
        return {t for t, v in zip(tables, verdicts, strict=True) if v is Verdict.WAITING}

    async def confirm_once(self) -> int:
        """Confirm what every group has read, and relay again what the log lost (tables whose
        last receipt was not KEPT: none on Kafka). Returns how many tables were confirmed."""
        owned = self.leases.owned()
        shards: Iterable[int] = owned
        if owned == self._checked_owned and time.monotonic() - self._checked_all < CONFIRM_ALL_S:
            shards = self._marked.intersection(owned)
        else:
            self._checked_all, self._checked_owned = time.monotonic(), owned
        waiting, oldest = await self.store.unconfirmed(shards)
        # A shard stays marked until a check finds it empty.
        self._marked = {shard_of(t) for t in waiting} | (self._marked - set(shards))
        if self.metrics:
            age = 0.0 if oldest is None else max(0.0, (self.now() - oldest) / 1000)
            self.metrics.unconfirmed_age.set(age)
        if not waiting:
            return 0
        tables = list(waiting)
        # A table marked before its receipt was kept has none: KEPT, which a log that may
        # forget cannot place (LOST: relayed again from what every group had read).
        verdicts = await self.publisher.check(TABLE_EVENTS, [waiting[t].receipt for t in tables])
        lost = [t for t, v in zip(tables, verdicts, strict=True) if v is Verdict.LOST]
        if lost:
            log.warning(
                "the log lost unconfirmed events: relaying them again",
                extra={"tables": len(lost)},
            )
            await self.store.replay_many(lost, self.now())
            self._committed.update(lost)
        done = {
            t: waiting[t].relayed
            for t, v in zip(tables, verdicts, strict=True)
            if v is Verdict.READ
        }
        if done:
            await self.store.confirm_many(done)
        return len(done)

    async def run(self, stop: asyncio.Event) -> None:
        backoff = Backoff(self.interval_s)
        while not stop.is_set():
            wait = self.interval_s
            try:
                owned = self.leases.owned()
                due = time.monotonic() - self._swept >= self.sweep_s or owned != self._owned
                self._owned = owned
                moved = await self.run_once(sweep=due)
                if time.monotonic() - self._confirmed >= CONFIRM_S:
                    self._confirmed = time.monotonic()
                    await self.confirm_once()
                backoff.reset()
                if moved >= BACKLOG:
                    continue  # behind: the next pass at once
                # Otherwise wait one interval even after a pass that moved events: passes then
                # carry many commits each instead of spinning on one event at a time.
            except Exception as exc:  # Kafka or Redis down: events stay in the streams
                log.warning("relay failed; will retry", extra={"error": repr(exc)})
                self._committed.update(self._fresh)  # what this replica holds goes next
                wait = backoff.failed()
            await pause(stop, wait)
            if not self._committed:
                await self._idle(stop)

    async def watch_lag(self, stop: asyncio.Event, every_s: float = LAG_S) -> None:
        """`bg_table_relay_lag_seconds`: how long the oldest event of the owned shards has
        waited for the log to accept it, read from the pending sets (a table enters its shard's
        at its first unrelayed commit, with that commit's time, and leaves once its events are
        acknowledged), on a loop of its own. Set by the passes, it stayed at 0 through a broker
        outage: a pass waits on the broker (issue 58)."""
        while not stop.is_set():
            try:
                pending = await self.store.pending_tables(self.leases.owned(), 1)
                oldest = min((score for _, score in pending), default=None)
                lag = 0.0 if oldest is None else max(0.0, (self.now() - oldest) / 1000)
                if self.metrics:
                    self.metrics.relay_lag.set(lag)
            except Exception as exc:  # Redis away: the store's own alerts say so
                log.debug("relay lag not read", extra={"error": repr(exc)[:200]})
            await pause(stop, every_s)

    async def _idle(self, stop: asyncio.Event) -> None:
        """Nothing committed here: wait for a commit, at most IDLE_S (an idle replica woke
        20 times a second for passes with nothing to do)."""
        self._woken.clear()
        if self._committed:
            return
        woken = asyncio.ensure_future(self._woken.wait())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait((woken, stopped), timeout=IDLE_S, return_when=FIRST_COMPLETED)
        finally:
            woken.cancel()
            stopped.cancel()

    async def close(self) -> None:
        await self.publisher.close()
