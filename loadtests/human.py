"""Players at a person's pace (issue 59's human profile). Each decision takes a think time drawn
from a log-normal distribution, whose long right tail is how people's response times fall: a
roll's median 1.5 s, a move's 4 s, a cube decision's 6 s (sigma 0.5, 0.6, 0.7: one roll in twenty
takes over 3.4 s, one move in twenty over 10.7 s), never past the clock's last second. Between
matches a person looks at the lobby (median 5 s). Around the play:

- after a match, half offer a rematch (I-32) and two in three accept one offered;
- one match in five has a word or two of chat;
- after a number of matches (geometric, mean 6) the person leaves and another signs in;
- one in twenty breaks between matches register for an open tournament and play it out;
- one command in 200 the connection drops: the stream closes and comes back 2-8 s later, resuming
  from the last seq it saw (every event once, in order: the `stream_gap` check);
- one turn in 100 the person is away and the turn's clock runs out (judged as the idle players'
  timeouts are), and one turn in 50 they click a point that cannot move (`illegal_accepted`).

Humans sit at tables of their own options, so they pair with each other at a person's pace."""

from __future__ import annotations

import math
import time
from typing import Any

import gevent
import grpc
from locust import task

from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.tournament import done_with, next_match
from loadtests.grpc_user import report
from loadtests.players import MOVING, GameUser
from services.contracts.vocabulary import FINISHED

# Options no stress user asks for (loadtests/locustfile.py): people pair with people.
OPTIONS = [
    table_pb2.TableOptions(profile="wagered", match_length=1, bet=600),
    table_pb2.TableOptions(profile="scored", match_length=3),
    table_pb2.TableOptions(profile="casual", match_length=3, cube=True),
]
# Think times: (median s, sigma) of a log-normal, by what is decided.
THINK = {"roll": (1.5, 0.5), "move": (4.0, 0.6), "cube": (6.0, 0.7), "lobby": (5.0, 0.6)}
CUBE = {"offer_double", "take", "drop"}
REMATCH_OFFER, REMATCH_ACCEPT = 0.5, 2 / 3
CHAT, MATCHES_MEAN, TOURNAMENT = 0.2, 6.0, 0.05
DROP_CONNECTION, AWAY_TURN, MISCLICK = 1 / 200, 1 / 100, 1 / 50
WORDS = ["gl", "nice roll", "gg", "wow", "ouch", "well played"]


class HumanUser(GameUser):
    weight = 1
    options = OPTIONS

    def on_start(self) -> None:
        super().on_start()
        self.matches_left = self._matches()

    def _matches(self) -> int:
        """A geometric count of matches before the person leaves (mean MATCHES_MEAN)."""
        return 1 + int(math.log(1 - self.rng.random()) / math.log(1 - 1 / MATCHES_MEAN))

    def think(self, what: str, v: Any | None = None) -> None:
        median, sigma = THINK[what]
        seconds = self.rng.lognormvariate(math.log(median), sigma)
        if v is not None and v.deadline_ms:
            left = v.deadline_ms / 1000 - _now_s()
            seconds = min(seconds, max(0.0, left - 1.0))  # a person beats the clock
        gevent.sleep(seconds)

    @task
    def session(self) -> None:
        self.think("lobby")
        if self.rng.random() < TOURNAMENT and self.tournament():
            pass
        elif table_id := self.seat(self.rng.choice(self.options)):
            self.play_match(table_id)
        self.matches_left -= 1
        if self.matches_left <= 0:  # this person leaves; another signs in
            report(self.environment, "human", "left")
            self.sign_in()
            self.matches_left = self._matches()

    # -- a match ----------------------------------------------------------------------------

    def play_match(self, table_id: str) -> None:
        self.open_stream(table_id)
        try:
            if self.rng.random() < CHAT:
                self.chat(table_id)
            for _ in range(3000):
                v = self.latest
                if v.phase in FINISHED:
                    report(self.environment, "check", "match_completed")
                    if not self.rematch(v):
                        return
                    continue
                choice = self.decide(v)
                if choice is None:
                    self.drain(2.0)
                    continue
                if self.rng.random() < DROP_CONNECTION:
                    self.reconnect(table_id)
                    continue
                if self.rng.random() < AWAY_TURN and v.deadline_ms:
                    self.away_for_the_turn(v)
                    continue
                if v.phase == MOVING and not v.steps and self.rng.random() < MISCLICK:
                    self.try_illegal_step(v)
                name = choice[1]
                self.think("cube" if name in CUBE else "roll" if name == "roll" else "move", v)
                if self.latest.seq != v.seq:  # a clock moved the table on while we thought
                    continue
                self.check_play(v, name, self.send(choice[0], v.seq, name))
        finally:
            self.close_stream()

    def rematch(self, v: Any) -> bool:
        """After the match: offer or accept a rematch, as people do, deciding once; True when
        a new match is dealt on the table (the stream goes on with it)."""
        offers, accepts = self.rng.random() < REMATCH_OFFER, self.rng.random() < REMATCH_ACCEPT
        answered = False
        for _ in range(15):  # the other side decides (or the offer lapses)
            v = self.latest
            if v.phase not in FINISHED:
                report(self.environment, "human", "rematch")
                return True
            theirs = v.rematch_offered_by not in (-1, v.seat)
            if not answered and not v.rematch_agreed and ((theirs and accepts) or offers):
                answered = True
                self.think("cube")
                empty = table_pb2.Empty()
                cmd = (
                    table_pb2.Command(accept_rematch=empty)
                    if theirs
                    else table_pb2.Command(offer_rematch=empty)
                )
                self.send(cmd, v.seq, str(cmd.WhichOneof("kind")))
            self.drain(1.0)
        return False

    def chat(self, table_id: str) -> None:
        request = gateway_pb2.SendChatRequest(
            table_id=table_id,
            channel=gateway_pb2.CHAT_CHANNEL_TABLE,
            text=self.rng.choice(WORDS),
        )
        self.stub.SendChat(request, metadata=self.auth)

    def reconnect(self, table_id: str) -> None:
        """The connection drops; the app comes back a few seconds later, resuming from the last
        seq it saw."""
        seen = self.seen_seq
        self.close_stream()
        report(self.environment, "human", "reconnected")
        gevent.sleep(self.rng.uniform(2.0, 8.0))
        self.open_stream(table_id, from_seq=seen)

    def away_for_the_turn(self, v: Any) -> None:
        """The person looks away: the turn's clock runs out, and its timeout is judged."""
        self.clocks.watching = True
        self.clocks.pending = v.deadline_ms
        self.clocks.fired = 0
        until = v.deadline_ms / 1000 - _now_s() + self.settings.late_bound_ms / 1000 + 5
        for _ in range(max(1, int(until))):
            self.drain(1.0)
            if self.latest.seq != v.seq:
                break
        self.clocks.watching = False

    def on_event(self, event: Any) -> None:
        self.clocks.on_event(event, reporter=self.clocks.watching)
        if event.WhichOneof("body") == "timed_out":
            self.clocks.watching = False

    # -- a tournament -----------------------------------------------------------------------

    def tournament(self) -> bool:
        """Register for an open tournament and play it out; False when none is open."""
        listed = self.stub.ListTournaments(
            matchmaking_pb2.ListTournamentsRequest(status="registering"), metadata=self.auth
        )
        if not listed.tournaments:
            return False
        found = self.rng.choice(list(listed.tournaments))
        asked = matchmaking_pb2.TournamentRequest(tournament_id=found.tournament_id)
        try:
            self.stub.RegisterTournament(asked, metadata=self.auth)
        except grpc.RpcError:
            return False  # full or started meanwhile (counted by its code)
        report(self.environment, "human", "tournament")
        played: set[str] = set()
        for _ in range(600):
            found = self.stub.GetTournament(asked, metadata=self.auth)
            if done_with(found, self.player_id):
                return True
            if match := next_match(found, self.player_id, played):
                played.add(match.table_id)
                self.play_match(match.table_id)
            else:
                gevent.sleep(2.0)
        return True


def _now_s() -> float:
    """The wall clock, as a person's app reads it against the deadlines the table shows."""
    return time.time()
