"""Locust users of the gateway's gRPC API (gevent-friendly gRPC; never grpc.aio here), run by
`python -m loadtests.run` on Locust's own master and workers.

The stress profile (as fast as the cluster answers):
- PlayerUser: quick-matches and plays whole matches with legal plays, checking the server's
  offers against its own engine (`disagreement`) and that no legal play is refused.
- AdversaryUser: plays too, but first tries an illegal step, an out-of-turn command and a stale
  seq; each one the server accepts is an `illegal_accepted`.
- IdleUser: sits at tables and lets every clock run out, judging each timeout against its
  announced deadline (early, late beyond the bound, doubled, missed).
The human profile (loadtests/human.py): players at a person's pace, who rematch, chat, leave,
join tournaments and lose their connection. `--load-profile mix` runs both.

Counters are Locust entries of type `check` (a failure is a correctness failure); refusals are
counted by code (loadtests/failures.py); the master writes the run's funded players for the
runner's ledger summary (`--load-run-dir`).
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import gevent
from grpc import _common as grpc_common
from locust import events, task
from locust.runners import MasterRunner, WorkerRunner

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2
from loadtests import settings
from loadtests.grpc_user import report
from loadtests.human import HumanUser
from loadtests.players import FUNDED, MOVING, GameUser
from loadtests.settings import STRESS_WEIGHTS
from services.contracts.vocabulary import FINISHED

__all__ = ["AdversaryUser", "HumanUser", "IdleUser", "PlayerUser"]

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
WAIT_S = 5.0
_funded: dict[str, int] = {}  # the master's record: player -> diamonds granted


@events.init_command_line_parser.add_listener  # type: ignore[untyped-decorator]
def _arguments(parser: Any) -> None:
    settings.add_arguments(parser)


@events.init.add_listener  # type: ignore[untyped-decorator]
def _init(environment: Any, **_: Any) -> None:
    import grpc.experimental.gevent as grpc_gevent

    gevent.get_hub().threadpool.maxsize = THREADPOOL
    grpc_gevent.init_gevent()
    # A blocked stream read waits in a thread of that pool and wakes every 0.1 s to look again
    # (grpc's _common.wait), though a message's arrival wakes it at once: at 500 streams a
    # worker woke 5,000 times a second for nothing. Every few seconds is enough for a stop.
    grpc_common.MAXIMUM_WAIT_TIMEOUT = WAIT_S
    options = environment.parsed_options
    if options is not None and options.load_profile == "mix":
        # The master deals users to workers by weight: humans' share of all users.
        share = min(max(options.load_human_share, 0.01), 0.99)
        HumanUser.weight = max(1, round(sum(STRESS_WEIGHTS.values()) * share / (1 - share)))
    if not isinstance(environment.runner, WorkerRunner):
        environment.runner.register_message(FUNDED, _on_funded)


def _on_funded(msg: Any, **_: Any) -> None:
    _funded[msg.data["player_id"]] = int(msg.data["granted"])


@events.quitting.add_listener  # type: ignore[untyped-decorator]
def _write_players(environment: Any, **_: Any) -> None:
    """The master (or a lone local runner) writes who it funded, for the runner's summary."""
    if isinstance(environment.runner, WorkerRunner) or environment.parsed_options is None:
        return
    run_dir = environment.parsed_options.load_run_dir
    if run_dir and (isinstance(environment.runner, MasterRunner) or _funded):
        Path(run_dir, "players.json").write_text(json.dumps(_funded))


class StressUser(GameUser):
    abstract = True
    options = PROFILES

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
                self.check_play(v, name, self.send(cmd, v.seq, name))
        finally:
            self.close_stream()

    def before_command(self, v: Any) -> None:
        """Hook: adversaries try their tricks here."""

    @task
    def one_match(self) -> None:
        table_id = self.seat(self.rng.choice(self.options))
        if table_id:
            self.play_match(table_id)


class PlayerUser(StressUser):
    weight = STRESS_WEIGHTS["PlayerUser"]


class AdversaryUser(StressUser):
    weight = STRESS_WEIGHTS["AdversaryUser"]

    def before_command(self, v: Any) -> None:
        if v.phase == MOVING and not v.steps:
            self.try_illegal_step(v)
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


class IdleUser(StressUser):
    """Never acts: every clock of its tables runs out, each judged (loadtests/players.py)."""

    weight = STRESS_WEIGHTS["IdleUser"]  # at least two of them, so idle tables pair up
    slots = itertools.count()  # idle users take the idle options two by two, so they pair

    def on_start(self) -> None:
        super().on_start()
        idle = [*IDLE, AWAY, ANSWER]
        self.options = [idle[(next(IdleUser.slots) // 2) % len(idle)]]
        self.clocks.watching = True

    def on_event(self, event: Any) -> None:
        self.clocks.on_event(event, reporter=self.latest is None or self.latest.seat == 0)

    def play_match(self, table_id: str) -> None:
        self.clocks.pending, self.clocks.away_deadline, self.clocks.fired = None, None, 0
        self.open_stream(table_id)
        v = self.latest
        options = v.options
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
