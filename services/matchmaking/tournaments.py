"""Knockout tournaments (issue 29): registration, the bracket, and the director that deals each
round's matches and moves the winners on.

A tournament is one document changed by compare-and-set (services/matchmaking/adapters/
redis_tournaments.py). Everything the director does is derived from that document and is safe
to do twice or from two replicas at once:
- a pairing's table id is a hash of (tournament, round, slot, attempt), and the lobby seats it
  only if absent (`Lobby.seat_pairing`), so a pairing is dealt once however often it is tried;
- a winner is recorded by compare-and-set into the bracket, which takes one winner per match;
- so a director killed at any point leaves nothing a later pass (of any replica) cannot finish.

No-shows and leavers lose by the profile's own rules: the table's clocks and its leaving rule
end the match (I-8, the leaving row of RULES.md), and its winner moves on. A match closed
undecided (an operator's close) moves the higher seed on. A deal the lobby undid (the table
service was down, say) is dealt again under the next attempt's table id.

Wagered tournaments (buy-in = the options' bet) keep their money in a prize pool on the wallet
(services/wallet/pools.py), every call under a key derived from the tournament, so a retry or a
second director replays it:
- registering holds the buy-in (`money_keys.buyin_hold`, one key per registration of a player);
  withdrawing releases it; a hold the director never learns of is released by the start;
- the start captures the field's buy-ins before any match is dealt (`money` "running");
- the champion's pass pays `bracket.prizes` of the pool less the fee, once; a cancel (or too
  few players) refunds every buy-in. The tournament leaves the director's work only once its
  money is settled, so a wallet away delays the payout and never loses it;
- a pool an operator refunded (admin RefundOrphanPool, its document thought lost) is found
  closed at the next registration, the start or the payout: the tournament is cancelled
  (`pool_closed`), or its payout settled as refunded, and nobody is paid twice.
The matches themselves are wagered rules without a bet (TableOptions.tournament).

A finished tournament's result (its ranks and prizes) goes to the leaderboard as an event on
`tournament-events`; the document is its outbox (adapters/tournament_events.py): it stays the
director's work until every reader has the record, published again if the broker forgot it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from google.protobuf import json_format

from bg.events.v1 import events_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from services.common.clock import now_ms
from services.common.errors import InvalidArgument, NotFound, PermissionDenied, ServiceError
from services.common.log_port import KEPT, Receipt
from services.contracts import money_keys
from services.contracts.bounds import TOURNAMENT_NAME_MAX
from services.contracts.table_options import rules_from_proto
from services.matchmaking.bracket import MAX_FIELD, Bracket, prizes
from services.matchmaking.lobby import Lobby
from services.matchmaking.metrics import TournamentMetrics
from services.matchmaking.ports import PoolPort, ResultsPort, TablePort, TournamentRepository
from services.matchmaking.table_documents import LobbyStatus

log = logging.getLogger("bg.matchmaking.tournaments")
SIT_AND_GO, SCHEDULED = "sit_and_go", "scheduled"
SIT_AND_GO_SIZES = (4, 8, 16, 32)
REGISTERING, RUNNING, FINISHED, CANCELLED = "registering", "running", "finished", "cancelled"
PROFILES = ("casual", "scored", "wagered")
# A wagered tournament's money (TournamentDoc.money): "" for none (casual, scored).
OPEN, POOL_RUNNING, PAID, REFUNDED = "open", "running", "paid", "refunded"
# A registration under way may sit for JOIN_SIT_MS (a wallet's hold inside it); its mark keeps
# the player's claim from other tournaments twice as long (replicas' clocks differ a little).
JOIN_SIT_MS, JOIN_HELD_MS = 30_000, 60_000


@dataclass
class TournamentDoc:
    tournament_id: str
    name: str
    kind: str
    options: dict[str, Any]  # TableOptions as JSON (protobuf field names)
    size: int
    starts_ms: int
    lengths: list[int]
    status: str = REGISTERING
    players: list[str] = field(default_factory=list)
    seeded: list[str] = field(default_factory=list)  # the field in seed order, at the start
    winners: dict[str, dict[str, str]] = field(default_factory=dict)  # round -> slot -> winner
    tables: dict[str, str] = field(default_factory=dict)  # "round:slot" -> the table dealt
    attempts: dict[str, int] = field(default_factory=dict)  # "round:slot" -> deals undone
    created_ms: int = field(default_factory=now_ms)
    finished_ms: int = 0
    cancel_reason: str = ""
    buy_in: int = 0  # wagered: each player's buy-in (the options' bet)
    money: str = ""  # wagered: open, running, paid or refunded (the pool's, as last known)
    entries: dict[str, int] = field(default_factory=dict)  # player -> withdrawals so far
    prize_money: int = 0  # the pool less the house fee, once started
    fee: int = 0
    prizes: dict[str, int] = field(default_factory=dict)  # player -> prize, once paid
    # The result's record on the event log, once finished: {"receipt": the log's, "read": bool}
    announced: dict[str, Any] = field(default_factory=dict)
    freed: bool = False  # ended, and every player's claim let go (free to enter another)
    joining: dict[str, int] = field(default_factory=dict)  # player -> ms a registration began

    def bracket(self) -> Bracket:
        winners = {
            int(r): {int(s): p for s, p in slots.items()} for r, slots in self.winners.items()
        }
        return Bracket(self.seeded, winners)

    def length_of(self, round_: int) -> int:
        return self.lengths[min(round_, len(self.lengths)) - 1]

    def table_options(self, round_: int) -> table_pb2.TableOptions:
        """A pairing's options: the round's length, a tournament's match (no rematch; wagered
        without a bet: the buy-in was the stake)."""
        opts = json_format.ParseDict(self.options, table_pb2.TableOptions())
        opts.match_length = self.length_of(round_)
        opts.tournament = True
        opts.bet = 0
        return opts

    def buyin_key(self, player_id: str) -> str:
        return money_keys.buyin_hold(self.tournament_id, player_id, self.entries.get(player_id, 0))


def _pairing_table(tournament_id: str, round_: int, slot: int, attempt: int) -> str:
    digest = hashlib.sha256(f"{tournament_id}:{round_}:{slot}:{attempt}".encode()).hexdigest()
    return "t" + digest[:16]


class Tournaments:
    def __init__(
        self,
        store: TournamentRepository,
        lobby: Lobby,
        tables: TablePort,
        pool: PoolPort,
        results: ResultsPort,
        now: Callable[[], int] = now_ms,
        metrics: TournamentMetrics | None = None,
    ) -> None:
        self.store = store
        self.lobby = lobby
        self.tables = tables
        self.pool = pool
        self.results = results
        self.now = now
        self.metrics = metrics

    # -- documents ---------------------------------------------------------------------------

    async def get(self, tournament_id: str) -> TournamentDoc:
        raw = await self.store.read(tournament_id)
        if raw is None:
            raise NotFound("UNKNOWN_TOURNAMENT", "no such tournament", field="tournament_id")
        return TournamentDoc(**json.loads(raw))

    async def _update(
        self, tournament_id: str, change: Callable[[TournamentDoc], None]
    ) -> TournamentDoc:
        """Read, change, write only if unchanged since the read (retried on a race); `change`
        raises to refuse."""
        for _ in range(50):
            raw = await self.store.read(tournament_id)
            if raw is None:
                raise NotFound("UNKNOWN_TOURNAMENT", "no such tournament", field="tournament_id")
            doc = TournamentDoc(**json.loads(raw))
            change(doc)
            new = json.dumps(asdict(doc))
            if new == raw or await self.store.save_if_unchanged(tournament_id, raw, new):
                return doc
        raise ServiceError("BUSY", "the tournament is busy; try again")

    # -- operators ---------------------------------------------------------------------------

    async def create(self, request: matchmaking_pb2.CreateTournamentRequest) -> TournamentDoc:
        name = request.name.strip()
        if not 1 <= len(name) <= TOURNAMENT_NAME_MAX:
            raise InvalidArgument(
                "INVALID_NAME", f"a name of 1..{TOURNAMENT_NAME_MAX} characters", field="name"
            )
        opts = request.options
        if opts.profile not in PROFILES:
            raise InvalidArgument(
                "INVALID_OPTION",
                f"a tournament's profile is {' or '.join(PROFILES)}",
                field="options.profile",
            )
        if opts.level:
            raise InvalidArgument("INVALID_OPTION", "tournaments pair people", field="level")
        if opts.test_game or opts.tournament:
            raise InvalidArgument(
                "INVALID_OPTION",
                "a tournament's matches are real ones, dealt by it",
                field="options",
            )
        rules_from_proto(opts)  # every other option, as CreateTable checks it (a buy-in: the bet)
        if request.kind == SIT_AND_GO:
            if request.size not in SIT_AND_GO_SIZES:
                raise InvalidArgument(
                    "INVALID_SIZE", "a sit-and-go is 4, 8, 16 or 32 players", field="size"
                )
        elif request.kind == SCHEDULED:
            if not 2 <= request.size <= MAX_FIELD:
                raise InvalidArgument("INVALID_SIZE", f"2..{MAX_FIELD} players", field="size")
            if request.starts_ms <= self.now():
                raise InvalidArgument("INVALID_START", "a start in the future", field="starts_ms")
        else:
            raise InvalidArgument("INVALID_KIND", "sit_and_go or scheduled", field="kind")
        lengths = list(request.lengths) or [opts.match_length or 1]
        if len(lengths) > MAX_FIELD.bit_length():
            raise InvalidArgument("INVALID_OPTION", "a length per round at most", field="lengths")
        for n in lengths:  # each round's length as the table service will take it
            if n < 1:
                raise InvalidArgument("INVALID_OPTION", "a length of 1 or more", field="lengths")
            round_opts = table_pb2.TableOptions()
            round_opts.CopyFrom(opts)
            round_opts.match_length = n
            try:
                rules_from_proto(round_opts)
            except InvalidArgument as err:
                raise InvalidArgument("INVALID_OPTION", err.message, field="lengths") from None
        seed = request.request_id or f"{self.now()}:{random.random()}"
        tournament_id = "u" + hashlib.sha256(f"tournament:{seed}".encode()).hexdigest()[:12]
        doc = TournamentDoc(
            tournament_id=tournament_id,
            name=name,
            kind=request.kind,
            options=json_format.MessageToDict(opts, preserving_proto_field_name=True),
            size=request.size,
            starts_ms=request.starts_ms if request.kind == SCHEDULED else 0,
            lengths=lengths,
            created_ms=self.now(),
            buy_in=opts.bet if opts.profile == "wagered" else 0,
            money=OPEN if opts.profile == "wagered" else "",
        )
        if not await self.store.create(tournament_id, json.dumps(asdict(doc)), doc.created_ms):
            return await self.get(tournament_id)  # a retry of the same request
        return doc

    async def cancel(self, tournament_id: str, reason: str) -> TournamentDoc:
        def stop(doc: TournamentDoc) -> None:
            if doc.status in (FINISHED, CANCELLED):
                raise ServiceError("TOURNAMENT_OVER", f"the tournament is {doc.status}")
            doc.status, doc.cancel_reason, doc.finished_ms = CANCELLED, reason, self.now()

        doc = await self._update(tournament_id, stop)
        try:
            doc = await self._wind_up(doc)  # the buy-ins back (the director retries if this fails)
        except ServiceError as err:
            log.warning("cancelled; refunded on a later pass", extra={"code": err.code})
        return doc

    # -- players -----------------------------------------------------------------------------

    async def register(self, player_id: str, tournament_id: str) -> TournamentDoc:
        doc = await self.get(tournament_id)
        if player_id in doc.players and doc.status in (REGISTERING, RUNNING):
            return doc  # a retry: registered (and, wagered, paid) once
        if doc.status != REGISTERING:
            raise ServiceError("TOURNAMENT_CLOSED", f"the tournament is {doc.status}")
        await self.lobby.refuse_restricted(player_id)  # a tournament feeds a board (issue 61)
        # Joining is marked in the document before the claim is taken, so a registration for
        # another tournament racing this one finds the claim live, never a leftover (I-39).
        doc = await self._update(tournament_id, _joining(player_id, self.now()))
        if player_id in doc.players:
            return doc
        try:
            held = await self.store.claim_player(player_id, tournament_id, "")
            if held is not None and held != tournament_id:
                if await self._still_holds(held, player_id):
                    raise ServiceError(
                        "TOURNAMENT_ELSEWHERE",
                        "you are in another tournament",
                        tournament_id=held,
                    )
                await self.store.claim_player(player_id, tournament_id, held)  # a stale claim
        except ServiceError:
            await self._update(tournament_id, _unjoin(player_id))
            raise

        def sit(d: TournamentDoc) -> None:
            if player_id in d.players:
                return
            if d.status != REGISTERING:
                raise ServiceError("TOURNAMENT_CLOSED", f"the tournament is {d.status}")
            if len(d.players) >= d.size:
                raise ServiceError("TOURNAMENT_FULL", "the tournament is full")
            if d.buyin_key(player_id) != held_key or not _joins(d, player_id, self.now()):
                raise ServiceError("BUSY", "your registration changed meanwhile; try again")
            d.joining.pop(player_id, None)
            d.players.append(player_id)

        held_key = doc.buyin_key(player_id)
        try:
            if doc.buy_in:  # the buy-in first: the field holds nobody who has not paid
                await self._hold_buyin(held_key, doc, player_id)
            try:
                doc = await self._update(tournament_id, sit)
            except ServiceError:
                if doc.buy_in:
                    await self._release_buyin(held_key)
                raise
        except ServiceError:
            await self._update(tournament_id, _unjoin(player_id))
            await self.store.release_player(player_id, tournament_id)
            raise
        if doc.kind == SIT_AND_GO and len(doc.players) == doc.size:
            doc = await self.drive(tournament_id)  # full: dealt at once
        return doc

    async def _hold_buyin(self, key: str, doc: TournamentDoc, player_id: str) -> None:
        try:
            await self.pool.hold_buyin(key, doc.tournament_id, player_id, doc.buy_in)
        except ServiceError as err:
            if err.code == "POOL_CLOSED":  # it started (or was cancelled) meanwhile
                if err.metadata.get("pool_status") == REFUNDED:  # or an operator refunded it
                    _pool_closed(doc.tournament_id, err)
                    await self._update(doc.tournament_id, _cancelled("pool_closed", self.now()))
                raise ServiceError(
                    "TOURNAMENT_CLOSED", "the tournament is not registering"
                ) from None
            raise

    async def _release_buyin(self, hold_key: str) -> None:
        """Give a buy-in back at once; if the wallet is away, the start (or the refund) releases
        every hold outside the field, so nothing is lost, only held a while longer."""
        try:
            await self.pool.release(money_keys.release(hold_key), hold_key)
        except ServiceError as err:
            if err.code not in ("HOLD_CLOSED", "UNKNOWN_HOLD"):
                log.warning("buy-in not released yet", extra={"hold": hold_key, "code": err.code})

    async def _still_holds(self, tournament_id: str, player_id: str) -> bool:
        """Whether a player's claim by another tournament is live (not a crash's leftover)."""
        try:
            other = await self.get(tournament_id)
        except NotFound:
            return False
        if other.status == REGISTERING:
            return player_id in other.players or _joins(other, player_id, self.now(), JOIN_HELD_MS)
        if other.status == RUNNING:
            return player_id in other.seeded and player_id not in other.bracket().ranks()
        return False

    async def unregister(self, player_id: str, tournament_id: str) -> TournamentDoc:
        released: list[str] = []

        def stand(d: TournamentDoc) -> None:
            if player_id not in d.players:
                raise PermissionDenied("NOT_REGISTERED", "you are not registered")
            if d.status != REGISTERING:
                raise ServiceError("TOURNAMENT_STARTED", "the tournament has started")
            released[:] = [d.buyin_key(player_id)]
            d.players.remove(player_id)
            d.entries[player_id] = d.entries.get(player_id, 0) + 1  # a new key if they return

        doc = await self._update(tournament_id, stand)
        if doc.buy_in:
            await self._release_buyin(released[0])
        await self.store.release_player(player_id, tournament_id)
        return doc

    async def newest(self, status: str, limit: int) -> list[TournamentDoc]:
        out = []
        ids = await self.store.newest(200)
        for raw in await self.store.read_many(ids[: limit if not status else len(ids)]):
            if raw is None:
                continue  # expired
            doc = TournamentDoc(**json.loads(raw))
            if not status or doc.status == status:
                out.append(doc)
            if len(out) >= limit:
                break
        return out

    # -- the director ------------------------------------------------------------------------

    async def drive_all(self) -> int:
        """One pass over every unfinished tournament (each replica runs it; safe in parallel)."""
        driven, live, waiting = 0, 0, []
        for tournament_id in await self.store.unfinished():
            try:
                doc = await self.drive(tournament_id)
                driven += 1
            except NotFound:
                await self.store.mark_finished(tournament_id)
                continue
            except ServiceError as err:  # a service away: the next pass goes on
                log.warning(
                    "tournament pass failed",
                    extra={"tournament_id": tournament_id, "code": err.code},
                )
                try:
                    doc = await self.get(tournament_id)  # counted as it stands
                except ServiceError:
                    continue
            if doc.status in (REGISTERING, RUNNING):
                live += 1
            elif doc.money in (OPEN, POOL_RUNNING) or not (
                doc.status == CANCELLED or doc.announced.get("read")
            ):
                waiting.append(doc.finished_ms)  # ended: its money or its result still to go
        if self.metrics is not None:
            self.metrics.running.set(live)
            self.metrics.unsettled.set(len(waiting))
            oldest = min(waiting, default=None)
            self.metrics.oldest_unsettled.set(
                0 if oldest is None else max(0.0, (self.now() - oldest) / 1000)
            )
        return driven

    async def drive(self, tournament_id: str) -> TournamentDoc:
        doc = await self.get(tournament_id)
        if doc.status == REGISTERING:
            doc = await self._maybe_start(doc)
        if doc.status == RUNNING and doc.money == OPEN:
            doc = await self._start_pool(doc)
        if doc.status == RUNNING:
            doc = await self._advance(doc)
        if doc.status in (FINISHED, CANCELLED):
            doc = await self._wind_up(doc)
        return doc

    async def _start_pool(self, doc: TournamentDoc) -> TournamentDoc:
        """Capture the field's buy-ins before any match is dealt (the wallet away: no match is
        dealt; the next pass tries again)."""
        key = money_keys.pool_start(doc.tournament_id)
        try:
            prize_money, fee = await self.pool.start_pool(key, doc.tournament_id, doc.seeded)
        except ServiceError as err:
            if err.code == "POOL_CLOSED":
                # Refunded by an operator, taken for an orphan (this document came back from a
                # restore): nothing left to play for. The cancel's refund replays theirs.
                _pool_closed(doc.tournament_id, err)
                return await self._update(doc.tournament_id, _cancelled("pool_closed", self.now()))
            if err.code != "NO_BUYIN":
                raise
            # Cannot happen by construction (a player sits only after their hold): refund them
            # all rather than play a field that did not all pay.
            log.error("a player of the field has no buy-in", extra={"players": err.metadata})
            return await self._update(doc.tournament_id, _cancelled("buyins_missing", self.now()))

        def started(d: TournamentDoc) -> None:
            if d.money == OPEN:
                d.money, d.prize_money, d.fee = POOL_RUNNING, prize_money, fee

        return await self._update(doc.tournament_id, started)

    async def _settle(self, doc: TournamentDoc) -> TournamentDoc:
        """A finished tournament's pool paid to its ranks, a cancelled one's refunded, once."""
        if doc.status == FINISHED and doc.money == POOL_RUNNING:
            paid = prizes(doc.prize_money, doc.bracket().ranks(), len(doc.seeded))
            how = PAID
            try:
                await self.pool.pay_prizes(
                    money_keys.prizes(doc.tournament_id), doc.tournament_id, paid
                )
            except ServiceError as err:
                if err.code != "POOL_CLOSED":
                    raise
                # An operator refunded it (as above): every buy-in went back, no prize is due.
                _pool_closed(doc.tournament_id, err)
                how, paid = REFUNDED, {}

            def settled(d: TournamentDoc) -> None:
                d.money, d.prizes = how, paid

            if self.metrics is not None:
                self.metrics.settled.labels(how).inc()
            return await self._update(doc.tournament_id, settled)
        if doc.status == CANCELLED and doc.money in (OPEN, POOL_RUNNING):
            await self.pool.refund_pool(
                money_keys.pool_refund(doc.tournament_id), doc.tournament_id
            )

            def refunded(d: TournamentDoc) -> None:
                d.money = REFUNDED

            if self.metrics is not None:
                self.metrics.settled.labels("refunded").inc()
            return await self._update(doc.tournament_id, refunded)
        return doc

    async def _maybe_start(self, doc: TournamentDoc) -> TournamentDoc:
        due = doc.kind == SCHEDULED and self.now() >= doc.starts_ms
        full = doc.kind == SIT_AND_GO and len(doc.players) >= doc.size
        if not (due or full):
            return doc

        def start(d: TournamentDoc) -> None:
            if d.status != REGISTERING:
                return
            if len(d.players) < 2:
                _cancelled("too_few_players", self.now())(d)
                return
            seeded = list(d.players)
            random.Random(d.tournament_id).shuffle(seeded)  # the same seeding on every replica
            d.status, d.seeded, d.joining = RUNNING, seeded, {}

        return await self._update(doc.tournament_id, start)

    async def _advance(self, doc: TournamentDoc) -> TournamentDoc:
        """Deal every ready pairing; record every ended match's winner; finish at a champion."""
        for match in doc.bracket().ready():
            key = f"{match.round}:{match.slot}"
            attempt = doc.attempts.get(key, 0)
            table_id = doc.tables.get(key) or _pairing_table(
                doc.tournament_id, match.round, match.slot, attempt
            )
            assert match.top is not None and match.bottom is not None
            table = await self.lobby.seat_pairing(
                table_id,
                [match.top, match.bottom],
                doc.table_options(match.round),
                doc.tournament_id,
            )
            if doc.tables.get(key) != table_id:
                doc = await self._update(doc.tournament_id, _set_table(key, table_id))
            if table.status == LobbyStatus.CLOSED:
                # The deal was undone: deal it again under the next attempt's table.
                doc = await self._update(doc.tournament_id, _redeal(key, table_id))
                continue
            if table.status != LobbyStatus.DEALT:
                continue
            winner = await self.tables.match_winner(table_id, table.match_id)
            if winner is None:
                continue  # still playing
            if winner not in (match.top, match.bottom):
                winner = match.top  # closed undecided: the higher seed moves on
            doc = await self._update(doc.tournament_id, _record(match.round, match.slot, winner))
            loser = match.bottom if winner == match.top else match.top
            # Out: free to enter another tournament (a crash before this leaves a claim that
            # registering takes over, since a ranked player's claim is not live).
            await self.store.release_player(loser, doc.tournament_id)
        if doc.bracket().champion is not None and doc.status == RUNNING:

            def finish(d: TournamentDoc) -> None:
                if d.status == RUNNING:
                    d.status, d.finished_ms = FINISHED, self.now()

            doc = await self._update(doc.tournament_id, finish)
        return doc

    async def _wind_up(self, doc: TournamentDoc) -> TournamentDoc:
        """An ended tournament: its money settled, its players free, its result announced; only
        then does it leave the director's work."""
        doc = await self._settle(doc)
        if not doc.freed:  # once, not on every pass that waits for the result to be read
            for player in set(doc.players) | set(doc.seeded):
                await self.store.release_player(player, doc.tournament_id)
            doc = await self._update(doc.tournament_id, _freed)
        if doc.status == FINISHED:
            doc = await self._announce(doc)
            if not doc.announced.get("read"):
                return doc  # the next pass looks again
        await self.store.mark_finished(doc.tournament_id)
        return doc

    async def _announce(self, doc: TournamentDoc) -> TournamentDoc:
        """Publish the result (again, if the broker forgot it), or confirm it was read."""
        try:
            if doc.announced:
                # (A document announced before receipts, 2026-12, kept {"sent": ...}: read as
                # none, which a log that may forget answers LOST: announced again, deduped.)
                receipt = Receipt(doc.announced.get("receipt", KEPT))
                read = await self.results.read(receipt)
                if read is None:
                    return doc  # sent, not read by every group yet
                if read:
                    record = {"receipt": receipt, "read": True}
            if not doc.announced or read is False:  # never sent, or the log lost it
                value = result_event(doc).SerializeToString()
                fresh = await self.results.publish(doc.tournament_id, value)
                record = {"receipt": fresh, "read": False}
        except Exception as exc:  # the broker away: the result waits in the document
            log.warning(
                "tournament result not announced yet",
                extra={"tournament_id": doc.tournament_id, "error": repr(exc)[:200]},
            )
            return doc

        def announced(d: TournamentDoc) -> None:
            d.announced = record

        return await self._update(doc.tournament_id, announced)


def _pool_closed(tournament_id: str, err: ServiceError) -> None:
    log.error(
        "the tournament's pool was settled by someone else",
        extra={"tournament_id": tournament_id, "pool_status": err.metadata.get("pool_status")},
    )


def _joining(player_id: str, at_ms: int) -> Callable[[TournamentDoc], None]:
    """Mark a registration under way: kept if one still may sit (a retry racing its first),
    else marked anew (one past its time can no longer sit, so nothing depends on it)."""

    def change(d: TournamentDoc) -> None:
        if d.status != REGISTERING:
            raise ServiceError("TOURNAMENT_CLOSED", f"the tournament is {d.status}")
        if player_id in d.players:
            return
        if len(d.players) >= d.size:
            raise ServiceError("TOURNAMENT_FULL", "the tournament is full")
        if not _joins(d, player_id, at_ms):
            d.joining[player_id] = at_ms

    return change


def _unjoin(player_id: str) -> Callable[[TournamentDoc], None]:
    def change(d: TournamentDoc) -> None:
        d.joining.pop(player_id, None)

    return change


def _joins(d: TournamentDoc, player_id: str, now: int, within_ms: int = 0) -> bool:
    """Whether a registration of the player is under way: it may sit only within JOIN_SIT_MS of
    its start, and holds the player's claim against other tournaments for JOIN_HELD_MS, longer,
    so a claim is never taken over while its registration can still sit (a crash's mark lapses)."""
    began = d.joining.get(player_id)
    return began is not None and now - began < (within_ms or JOIN_SIT_MS)


def _freed(d: TournamentDoc) -> None:
    d.freed = True


def _cancelled(reason: str, at_ms: int) -> Callable[[TournamentDoc], None]:
    def change(d: TournamentDoc) -> None:
        if d.status in (REGISTERING, RUNNING):
            d.status, d.cancel_reason, d.finished_ms = CANCELLED, reason, at_ms

    return change


def _set_table(key: str, table_id: str) -> Callable[[TournamentDoc], None]:
    def change(d: TournamentDoc) -> None:
        d.tables.setdefault(key, table_id)

    return change


def _redeal(key: str, table_id: str) -> Callable[[TournamentDoc], None]:
    def change(d: TournamentDoc) -> None:
        if d.tables.get(key) == table_id:
            d.attempts[key] = d.attempts.get(key, 0) + 1
            del d.tables[key]

    return change


def _record(round_: int, slot: int, winner: str) -> Callable[[TournamentDoc], None]:
    def change(d: TournamentDoc) -> None:
        if d.status != RUNNING:
            return
        d.winners = _winners_json(d.bracket().record(round_, slot, winner).winners)

    return change


def _winners_json(winners: dict[int, dict[int, str]]) -> dict[str, dict[str, str]]:
    return {str(r): {str(s): p for s, p in slots.items()} for r, slots in winners.items()}


def result_event(doc: TournamentDoc) -> events_pb2.TournamentEvent:
    """A finished tournament's record for the leaderboard: every player's rank and prize."""
    ranks = doc.bracket().ranks()
    return events_pb2.TournamentEvent(
        event_id=f"tournament:{doc.tournament_id}",
        tournament_id=doc.tournament_id,
        name=doc.name,
        profile=str(doc.options.get("profile", "")),
        kind=doc.kind,
        at_ms=doc.finished_ms,
        buy_in=doc.buy_in,
        placings=[
            events_pb2.TournamentPlacing(player_id=p, rank=r, prize=doc.prizes.get(p, 0))
            for p, r in sorted(ranks.items(), key=lambda pr: (pr[1], pr[0]))
        ],
    )


def to_proto(doc: TournamentDoc) -> matchmaking_pb2.Tournament:
    out = matchmaking_pb2.Tournament(
        tournament_id=doc.tournament_id,
        name=doc.name,
        kind=doc.kind,
        size=doc.size,
        starts_ms=doc.starts_ms,
        lengths=doc.lengths,
        status=doc.status,
        player_ids=doc.players,
        field=doc.seeded,
        created_ms=doc.created_ms,
        finished_ms=doc.finished_ms,
        cancel_reason=doc.cancel_reason,
        buy_in=doc.buy_in,
        prize_money=doc.prize_money,
        fee=doc.fee,
        money=doc.money,
        prizes=[
            matchmaking_pb2.TournamentPrize(player_id=p, amount=a)
            for p, a in sorted(doc.prizes.items(), key=lambda pa: (-pa[1], pa[0]))
        ],
    )
    json_format.ParseDict(doc.options, out.options)
    if doc.seeded:
        bracket = doc.bracket()
        out.rounds = bracket.rounds
        for r in range(1, bracket.rounds + 1):
            for m in bracket.matches(r):
                out.matches.add(
                    round=r,
                    slot=m.slot,
                    top_id=m.top or "",
                    bottom_id=m.bottom or "",
                    winner_id=m.winner or "",
                    table_id=doc.tables.get(f"{r}:{m.slot}", ""),
                )
        for player, rank in sorted(bracket.ranks().items(), key=lambda pr: (pr[1], pr[0])):
            out.ranks.add(player_id=player, rank=rank)
    return out
