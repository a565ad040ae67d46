"""Locust users of the gateway's gRPC API (gevent-friendly gRPC; never grpc.aio here).

- PlayerUser: quick-matches and plays whole matches with legal plays; every time the server
  offers movable checkers and lit points it checks them against its own engine computation
  (`disagreement`), and a legal play the server refuses is a `legal_refused`.
- AdversaryUser: plays too, but first tries an illegal step, an out-of-turn command and a stale
  seq; each one the server accepts is an `illegal_accepted`.
- IdleUser: sits at tables and lets every clock run out; records each timeout's lateness against
  the announced deadline (`lateness:<clock>`), and missed, doubled or early timeouts.
Counters are Locust entries of type `check` (a failure means a correctness failure); the run
script (`python -m loadtests.run`) turns the stats into the summary.
"""

from __future__ import annotations

import itertools
import os
import random
import time
import uuid
from typing import Any

import gevent
import gevent.queue
import grpc
from locust import User, events, task
from locust.exception import StopUser

from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.play_wire import next_command
from engine import bots
from engine.position import Position
from engine.turn import Turn
from loadtests.grpc_user import LocustInterceptor, report, rule_refusal
from services.contracts.vocabulary import FINISHED

MOVING = events_pb2.PHASE_MOVING
LATE_BOUND_MS = float(os.environ.get("LOAD_LATE_BOUND_MS", "1000"))
WAGERED = table_pb2.TableOptions(profile="wagered", match_length=1, bet=100)
PROFILES = [
    WAGERED,
    table_pb2.TableOptions(profile="scored", match_length=1),
    table_pb2.TableOptions(profile="casual", match_length=1, cube=True),
]
# Idle tables (options no player uses, so idle users pair with each other): the turn clock, the
# next-game deal of a longer match, and scored move time with its warning run out.
IDLE = [
    table_pb2.TableOptions(profile="wagered", match_length=1, bet=200),
    table_pb2.TableOptions(profile="wagered", match_length=3, bet=300),
    table_pb2.TableOptions(profile="scored", match_length=1, move_time_s=30),
]
# Away tables: seat 1 drops its stream at once and never returns (the 60 s window runs out).
AWAY = table_pb2.TableOptions(profile="wagered", match_length=1, bet=400)
# Answer tables: seat 0 offers a double at its first chance; nobody answers (I-2).
ANSWER = table_pb2.TableOptions(profile="wagered", match_length=1, bet=500)


# gRPC's gevent mode waits on completion queues in gevent's thread pool (10 threads by
# default): every open Play stream holds one, so a small pool throttles the generator itself.
THREADPOOL = int(os.environ.get("LOAD_THREADPOOL", "1000"))
# Each simulated player gets its own connection (grpc-python shares one TCP connection per
# address otherwise, so every player of a process would share one rate-limit bucket).
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


@events.init.add_listener  # type: ignore[untyped-decorator]
def _gevent_grpc(environment: Any, **_: Any) -> None:
    import grpc.experimental.gevent as grpc_gevent

    gevent.get_hub().threadpool.maxsize = THREADPOOL
    grpc_gevent.init_gevent()


class GameUser(User):
    abstract = True
    options: list[table_pb2.TableOptions] = PROFILES

    def on_start(self) -> None:
        channel = grpc.intercept_channel(
            grpc.insecure_channel(str(self.host), options=CHANNEL_OPTIONS),
            LocustInterceptor(self.environment),
        )
        self.stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        reply = self.stub.Login(gateway_pb2.LoginRequest(guest_name=type(self).__name__[:20]))
        self.token, self.player_id = reply.token, reply.player_id
        self.auth = (("authorization", f"Bearer {self.token}"),)
        wallet = wallet_pb2_grpc.WalletServiceStub(
            grpc.insecure_channel(os.environ["LOAD_WALLET_ADDR"])
        )
        wallet.Deposit(
            wallet_pb2.DepositRequest(
                idempotency_key=f"load:{self.player_id}", player_id=self.player_id, amount=100_000
            ),
            metadata=(("x-operator-token", os.environ["LOAD_OPERATOR_TOKEN"]),),
        )
        self.rng = random.Random(self.player_id)

    # -- lobby ------------------------------------------------------------------------------

    def seat(self, options: table_pb2.TableOptions) -> str | None:
        try:
            table = self.stub.QuickMatch(
                matchmaking_pb2.QuickMatchRequest(options=options), metadata=self.auth
            )
        except grpc.RpcError as exc:
            if not rule_refusal(exc):
                raise
            # W-1: the wagered match this player walked out of (an idle seat that vanished, a
            # match left at the loop's bound) is still on; the rules say wait, as a client does.
            report(self.environment, "check", "w1_refused")
            gevent.sleep(1.0)
            return None
        deadline = time.monotonic() + 60
        while table.status not in ("dealt", "closed") and time.monotonic() < deadline:
            gevent.sleep(0.3)
            table = self.stub.GetTable(
                matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=self.auth
            )
        if table.status != "dealt":
            self.stub.LeaveTable(
                matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=self.auth
            )
            return None
        return str(table.table_id)

    # -- the Play stream --------------------------------------------------------------------

    def open_stream(self, table_id: str) -> None:
        self.requests: gevent.queue.Queue[Any] = gevent.queue.Queue()
        self.updates: gevent.queue.Queue[Any] = gevent.queue.Queue()
        self.requests.put(gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table_id)))

        def outgoing() -> Any:
            while (item := self.requests.get()) is not None:
                yield item

        self.call = self.stub.Play(outgoing(), metadata=self.auth)

        def reader() -> None:
            try:
                for update in self.call:
                    self.updates.put(update)
            except grpc.RpcError:
                self.updates.put(None)

        self.reader = gevent.spawn(reader)
        self.latest: Any = None
        while self.latest is None:  # the join's update: the view to act on
            self.drain(30.0)

    def close_stream(self) -> None:
        self.requests.put(None)
        self.call.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs leaves it untyped
        self.reader.kill(block=False)

    def send(self, cmd: table_pb2.Command, seq: int, name: str) -> Any:
        """Send a command and wait for its answer; returns the CommandResult or CommandError."""
        command_id = uuid.uuid4().hex
        started = time.perf_counter()
        self.requests.put(
            gateway_pb2.PlayRequest(
                command=gateway_pb2.PlayCommand(
                    command_id=command_id, expected_seq=seq, command=cmd
                )
            )
        )
        while True:
            update = self.updates.get(timeout=30)
            if update is None:
                raise StopUser()
            self.on_update(update)
            kind = update.WhichOneof("kind")
            if kind in ("result", "error") and getattr(update, kind).command_id == command_id:
                elapsed = (time.perf_counter() - started) * 1000
                error = update.error.error.code if kind == "error" else None
                report(
                    self.environment,
                    "cmd",
                    name,
                    elapsed,
                    error
                    if error not in (None, "STALE_SEQ", "WRONG_PHASE", "NOT_YOUR_TURN")
                    else None,
                )
                answer = getattr(update, kind)
                while kind == "result" and self.latest.seq < answer.seq:
                    self.drain(30.0)  # act on the view that shows the command
                return answer

    def on_update(self, update: Any) -> None:
        """Keep the newest pushed view; hand each event to `on_event`."""
        if update.WhichOneof("kind") != "update":
            return
        for event in update.update.events:
            self.on_event(event)
        if self.latest is None or update.update.view.seq >= self.latest.seq:
            self.latest = update.update.view

    def on_event(self, event: Any) -> None:
        """Hook for events seen on the stream."""

    def drain(self, seconds: float) -> None:
        try:
            update = self.updates.get(timeout=seconds)
        except gevent.queue.Empty:
            return
        if update is None:
            raise StopUser()
        self.on_update(update)

    # -- playing ----------------------------------------------------------------------------

    def decide(self, v: Any) -> tuple[table_pb2.Command, str] | None:
        """The shared bot's next command and its name; checks the lit points first."""
        if v.decider == v.seat and v.phase == MOVING and len(v.dice) == 2 and not v.steps:
            self.check_lit(v, Position(tuple(v.own), tuple(v.opponent)))
        cmd = next_command(v, bots.normal_bot, self.rng)
        return None if cmd is None else (cmd, str(cmd.WhichOneof("kind")))

    def check_lit(self, v: Any, start: Position) -> None:
        ours = {frm: sorted(to) for frm, to in Turn(start, (v.dice[0], v.dice[1])).lit().items()}
        theirs = {getattr(lit, "from"): sorted(lit.to) for lit in v.lit}
        report(
            self.environment,
            "check",
            "disagreement",
            failure=None if ours == theirs else f"{v.position_id} {list(v.dice)}",
        )

    def play_match(self, table_id: str) -> None:
        self.open_stream(table_id)
        try:
            for _ in range(3000):
                v = self.latest
                if v.phase in FINISHED:
                    report(self.environment, "check", "match_completed")
                    return
                choice = self.decide(v)
                if choice is None:
                    self.drain(2.0)
                    continue
                self.before_command(v)
                cmd, name = choice
                answer = self.send(cmd, v.seq, name)
                if name == "submit_play" and hasattr(answer, "error"):
                    code = answer.error.code
                    refused = code in ("ILLEGAL_STEP", "INCOMPLETE_PLAY")
                    report(
                        self.environment,
                        "check",
                        "legal_refused",
                        failure=f"{v.position_id} {code}" if refused else None,
                    )
        finally:
            self.close_stream()

    def before_command(self, v: Any) -> None:
        """Hook: adversaries try their tricks here."""

    @task
    def one_match(self) -> None:
        try:
            table_id = self.seat(self.rng.choice(self.options))
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.CANCELLED:
                raise StopUser() from None  # Locust is stopping this user: not a failure
            raise
        if table_id:
            self.play_match(table_id)


class PlayerUser(GameUser):
    weight = 3


class AdversaryUser(GameUser):
    weight = 1

    def before_command(self, v: Any) -> None:
        if v.phase == MOVING and not v.steps:
            junk = events_pb2.Step(to=1)
            setattr(junk, "from", 26)  # no such point: must be refused
            self.expect_refused(table_pb2.Command(move=junk), v.seq, "illegal_step")
        self.expect_refused(
            table_pb2.Command(roll=table_pb2.Empty()), max(1, v.seq - 1), "stale_seq"
        )

    def decide(self, v: Any) -> tuple[table_pb2.Command, str] | None:
        if v.decider != v.seat and v.phase in (events_pb2.PHASE_AWAIT_ROLL, MOVING):
            # With the seq it saw: if the table moved on meanwhile this is STALE_SEQ, never a
            # legitimate roll that would look like an accepted illegal command.
            self.expect_refused(table_pb2.Command(roll=table_pb2.Empty()), v.seq, "out_of_turn")
            return None
        return super().decide(v)

    def expect_refused(self, cmd: table_pb2.Command, seq: int, what: str) -> None:
        answer = self.send(cmd, seq, f"junk_{what}")
        accepted = answer.DESCRIPTOR.name == "CommandResult"
        report(self.environment, "check", "illegal_accepted", failure=what if accepted else None)


class IdleUser(GameUser):
    """Never acts: every clock of its tables runs out. Checks each timeout against the deadline
    the table announced: early, late beyond the bound, doubled, or missed."""

    weight = 2  # at least two of them, so idle tables pair up
    options = [*IDLE, AWAY, ANSWER]
    pending: int | None = None
    away_deadline: int | None = None
    fired = 0
    is_reporter = False

    def on_event(self, event: Any) -> None:
        kind = event.WhichOneof("body")
        if kind == "turn_started":
            if self.pending is not None and self.is_reporter:
                # The previous turn ended without its timeout although nobody acts: missed.
                report(
                    self.environment,
                    "check",
                    "missed_timeout",
                    failure=f"{event.table_id}:{event.seq}",
                )
            self.pending = event.turn_started.deadline_ms or None
            self.fired = 0
        elif kind == "timed_out":
            self.fired += 1
            if self.is_reporter:
                out = event.timed_out
                lateness = out.now_ms - out.deadline_ms
                clock = events_pb2.DeadlineKind.Name(out.clock).removeprefix("DEADLINE_KIND_")
                report(self.environment, "clock", f"lateness:{clock.lower()}", max(0, lateness))
                report(
                    self.environment,
                    "check",
                    "early_timeout",
                    failure=str(lateness) if lateness < 0 else None,
                )
                report(
                    self.environment,
                    "check",
                    "late_beyond_bound",
                    failure=str(lateness) if lateness > LATE_BOUND_MS else None,
                )
                report(
                    self.environment,
                    "check",
                    "doubled_timeout",
                    failure=event.event_id if self.fired > 1 else None,
                )
            self.pending = None
        elif kind == "player_away":
            self.away_deadline = event.player_away.deadline_ms or None
        elif kind in ("match_ended", "match_closed", "game_ended"):
            ended_away = (
                kind == "match_ended" and event.match_ended.reason == events_pb2.END_REASON_AWAY
            )
            if ended_away and self.is_reporter and self.away_deadline is not None:
                late = max(0.0, event.at_ms - self.away_deadline)
                report(self.environment, "clock", "lateness:away", late)
            self.pending = None

    slots = itertools.count()  # idle users take the idle options two by two, so they pair

    def on_start(self) -> None:
        super().on_start()
        self.options = [self.options[(next(IdleUser.slots) // 2) % len(self.options)]]

    def play_match(self, table_id: str) -> None:
        self.pending = None
        self.away_deadline = None
        self.fired = 0
        self.open_stream(table_id)
        v = self.latest
        options = v.options
        self.is_reporter = v.seat == 0  # both seats see the same events: one reports
        if options.profile == "wagered" and options.bet == AWAY.bet and v.seat == 1:
            # Wait until the stream is live (the gateway counted us present), then vanish for
            # good: the other seat watches the 60 s window (x clock scale) run out.
            self.drain(10.0)
            self.close_stream()
            return
        doubled = False
        try:
            for _ in range(600):
                self.drain(1.0)
                v = self.latest
                if v.phase in FINISHED:
                    report(self.environment, "check", "match_completed")
                    return
                if options.bet == ANSWER.bet and v.can_double and not doubled:
                    doubled = True
                    self.send(
                        table_pb2.Command(offer_double=table_pb2.Empty()), v.seq, "offer_double"
                    )
        finally:
            self.close_stream()
