"""What every simulated player does, whatever its pace (loadtests/locustfile.py's users build on
it): sign in with the run's prefix, be funded through the operators' API, take a seat by quick
match, play on a Play stream, check the server's offers against its own engine, and watch the
clocks of the tables it sits at.

Counters are Locust entries of type `check` (a failure is a correctness failure): the engine's
offers (`disagreement`), a legal play refused (`legal_refused`), an illegal one accepted
(`illegal_accepted`), and each timeout early, late beyond the bound, doubled or missed."""

from __future__ import annotations

import itertools
import random
import threading
import time
import uuid
from typing import Any

import gevent
import gevent.queue
import grpc
from locust import User
from locust.exception import StopUser

from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.play_wire import next_command
from engine import bots
from engine.position import Position
from engine.turn import Turn
from loadtests.failures import kind_of
from loadtests.grpc_user import LocustInterceptor, refused, report, rule_refusal
from loadtests.operators import Funder
from loadtests.settings import Settings

MOVING = events_pb2.PHASE_MOVING
# Each simulated player gets its own connection (grpc-python shares one TCP connection per
# address otherwise, so every player of a process would share one rate-limit bucket).
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
FUNDED = "funded"  # the message a worker sends its master for each player it funded
_numbers = itertools.count(1)
_process = uuid.uuid4().hex[:2]  # names of one run differ across its processes
_funders: dict[str, Funder] = {}
_lock = threading.Lock()


def funder(s: Settings) -> Funder:
    """This process's one Funder (one operator sign-in shared by its users)."""
    with _lock:
        if s.run_id not in _funders:
            _funders[s.run_id] = Funder(s.admin, s.operator, s.operator_key, s.run_id, s.funds)
        return _funders[s.run_id]


class ClockWatch:
    """Checks each timeout of a table against the deadline it announced: early, late beyond the
    bound, doubled, or missed (a turn that ended with no timeout while nobody acted)."""

    def __init__(self, env: Any, late_bound_ms: float) -> None:
        self.env, self.late_bound_ms = env, late_bound_ms
        self.pending: int | None = None
        self.away_deadline: int | None = None
        self.fired = 0
        self.watching = False  # only turns nobody was to act in are judged "missed"

    def on_event(self, event: Any, reporter: bool) -> None:
        kind = event.WhichOneof("body")
        if kind == "turn_started":
            if self.pending is not None and self.watching and reporter:
                report(self.env, "check", "missed_timeout", failure=f"{event.table_id}:{event.seq}")
            self.pending = event.turn_started.deadline_ms or None
            self.fired = 0
        elif kind == "timed_out":
            self.fired += 1
            if reporter:
                self._judge(event)
            self.pending = None
        elif kind == "turn_passed":  # no legal move: the no-move window ends the turn, not a clock
            self.pending = None
        elif kind == "player_away":
            self.away_deadline = event.player_away.deadline_ms or None
        elif kind in ("match_ended", "match_closed", "game_ended"):
            away = kind == "match_ended" and event.match_ended.reason == events_pb2.END_REASON_AWAY
            if away and reporter and self.away_deadline is not None:
                report(
                    self.env, "clock", "lateness:away", max(0.0, event.at_ms - self.away_deadline)
                )
            self.pending = None

    def _judge(self, event: Any) -> None:
        out = event.timed_out
        lateness = out.now_ms - out.deadline_ms
        clock = events_pb2.DeadlineKind.Name(out.clock).removeprefix("DEADLINE_KIND_").lower()
        report(self.env, "clock", f"lateness:{clock}", max(0, lateness))
        report(self.env, "check", "early_timeout", failure=str(lateness) if lateness < 0 else None)
        late = str(lateness) if lateness > self.late_bound_ms else None
        report(self.env, "check", "late_beyond_bound", failure=late)
        report(
            self.env, "check", "doubled_timeout", failure=event.event_id if self.fired > 1 else None
        )


class GameUser(User):
    abstract = True
    options: list[table_pb2.TableOptions] = []

    def on_start(self) -> None:
        self.settings = Settings.of(self.environment)
        self.rng = random.Random()
        self.clocks = ClockWatch(self.environment, self.settings.late_bound_ms)
        channel = grpc.intercept_channel(
            self.settings.gateway.channel(CHANNEL_OPTIONS), LocustInterceptor(self.environment)
        )
        self.stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        self.sign_in()

    def sign_in(self) -> None:
        """A new player with the run's prefix (a guest, or a device account), funded."""
        s = self.settings
        # Letters and digits (a device account's name allows no other), 20 at most.
        name = f"{s.prefix}{s.run_id[-6:]}{_process}{next(_numbers)}"[:20]
        if s.accounts == "device":
            device = f"{s.prefix}-{uuid.uuid4().hex}"
            request = gateway_pb2.LoginRequest(device_id=device, display_name=name)
        else:
            request = gateway_pb2.LoginRequest(guest_name=name)
        reply = self.stub.Login(request)
        self.token, self.player_id = reply.token, reply.player_id
        self.auth = (("authorization", f"Bearer {self.token}"),)
        granted = funder(s).fund(self.player_id)
        self.environment.runner.send_message(
            FUNDED, {"player_id": self.player_id, "granted": granted}
        )

    # -- lobby ------------------------------------------------------------------------------

    def seat(self, options: table_pb2.TableOptions) -> str | None:
        try:
            table = self.stub.QuickMatch(
                matchmaking_pb2.QuickMatchRequest(options=options, request_id=uuid.uuid4().hex),
                metadata=self.auth,
            )
        except grpc.RpcError as exc:
            if not rule_refusal(exc):
                raise
            # W-1: the wagered match this player walked out of (an idle seat that vanished, a
            # match left at the loop's bound) is still on; the rules say wait, as a client does.
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

    def open_stream(self, table_id: str, from_seq: int = 0) -> None:
        self.table_id = table_id
        self.requests: gevent.queue.Queue[Any] = gevent.queue.Queue()
        self.updates: gevent.queue.Queue[Any] = gevent.queue.Queue()
        join = gateway_pb2.Join(table_id=table_id, from_seq=from_seq)
        self.requests.put(gateway_pb2.PlayRequest(join=join))

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
        self.seen_seq = from_seq
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
        command = gateway_pb2.PlayCommand(command_id=command_id, expected_seq=seq, command=cmd)
        self.requests.put(gateway_pb2.PlayRequest(command=command))
        while True:
            update = self.updates.get(timeout=60)
            if update is None:
                raise StopUser()
            self.on_update(update)
            kind = update.WhichOneof("kind")
            if kind in ("result", "error") and getattr(update, kind).command_id == command_id:
                elapsed = (time.perf_counter() - started) * 1000
                failure = None
                if kind == "error" and not name.startswith("junk_"):  # junk: refused, rightly
                    code = f"{update.error.status} {update.error.error.code}".strip()
                    refused(self.environment, name, code)
                    failure = code if kind_of(code) == "error" else None
                report(self.environment, "cmd", name, elapsed, failure)
                answer = getattr(update, kind)
                while kind == "result" and self.latest.seq < answer.seq:
                    self.drain(30.0)  # act on the view that shows the command
                return answer

    def on_update(self, update: Any) -> None:
        """Keep the newest pushed view; hand each event to `on_event`, checking none is lost or
        repeated on the way (a resumed stream fills what it missed)."""
        if update.WhichOneof("kind") != "update":
            return
        for event in update.update.events:
            if self.seen_seq and event.seq != self.seen_seq + 1:
                report(
                    self.environment, "check", "stream_gap", failure=f"{event.table_id}:{event.seq}"
                )
            self.seen_seq = event.seq
            self.on_event(event)
        if self.latest is None or update.update.view.seq >= self.latest.seq:
            self.latest = update.update.view
            self.seen_seq = max(self.seen_seq, self.latest.seq)

    def on_event(self, event: Any) -> None:
        """Hook for events seen on the stream (the clocks' checks are the idle players')."""

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

    def check_play(self, v: Any, name: str, answer: Any) -> None:
        if name == "submit_play" and hasattr(answer, "error"):
            code = answer.error.code
            refused_legal = code in ("ILLEGAL_STEP", "INCOMPLETE_PLAY")
            failure = f"{v.position_id} {code}" if refused_legal else None
            report(self.environment, "check", "legal_refused", failure=failure)

    def expect_refused(self, cmd: table_pb2.Command, seq: int, what: str) -> None:
        answer = self.send(cmd, seq, f"junk_{what}")
        accepted = answer.DESCRIPTOR.name == "CommandResult"
        report(self.environment, "check", "illegal_accepted", failure=what if accepted else None)

    def try_illegal_step(self, v: Any) -> None:
        junk = events_pb2.Step(to=1)
        setattr(junk, "from", 26)  # no such point: must be refused
        self.expect_refused(table_pb2.Command(move=junk), v.seq, "illegal_step")
