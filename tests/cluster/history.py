"""A Jepsen-style history of what the players asked and what they were answered (issue 42):
every unary call, every Play stream opened and every command sent, with its start and end on
the test's clock, its answer (a command's result seq, or the code it was refused with) and the
gateway the player talks to. The partition suite's checker reads it: no acknowledged command
lost or applied twice; and what players saw during each fault."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import grpc

from bg.gateway.v1 import gateway_pb2
from bg.table.v1 import table_pb2
from client.play_wire import CommandRefused, PlaySession
from client.player import Player
from wire.errors import error_from

# Refusals that are the table's answer to a client acting on a view a clock or the other
# player had already moved on (the client's race, not the cluster's failure), and W-1's: a
# player whose last wagered deal or match is still on waits before another.
RULES_ANSWERS = frozenset(
    {"STALE_SEQ", "NOT_YOUR_TURN", "MATCH_OVER", "RATE_LIMITED", "TIME_UP", "IN_ANOTHER_MATCH"}
)


@dataclass
class Call:
    player: str
    gateway: str
    op: str  # a unary method's name, "open" (a Play stream) or "command"
    table_id: str
    start: float
    end: float = 0.0
    code: str = ""  # "" answered; else the refusal's code, the gRPC status or the exception
    command_id: str = ""
    seq: int = 0  # a command's result: the table's seq after it
    duplicate: bool = False
    kind: str = ""  # a command's kind (roll, submit_play, offer_double, ...)

    @property
    def failed(self) -> bool:
        """Not answered, for a reason of the cluster's (a rule's refusal is an answer)."""
        return bool(self.code) and self.code.rsplit(" ", 1)[-1] not in RULES_ANSWERS


@dataclass
class Window:
    """One fault: when it was made, healed, and every call succeeded again."""

    name: str
    hosts: frozenset[str]  # the hosts whose calls the fault may touch (its cut links are theirs)
    start: float
    healed: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)  # the fault's own measurements


@dataclass
class History:
    calls: list[Call] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)

    def begin(self, player: RecordedPlayer, op: str, table_id: str = "") -> Call:
        call = Call(player.player_id or player.name, player.gateway, op, table_id, time.time())
        self.calls.append(call)
        return call

    def acknowledged(self) -> list[Call]:
        return [c for c in self.calls if c.op == "command" and not c.code]

    def report(self) -> list[dict[str, Any]]:
        """Per fault (from its start to the next's): the calls that failed, by gateway, how
        many players saw one, the seconds from the heal until the last failure ended (0: none
        after it); and the stalls players sat through (a client retries a lost call: it
        succeeds, late), the slowest call and how many took over a second, by gateway."""
        out = []
        for n, w in enumerate(self.windows):
            until = self.windows[n + 1].start if n + 1 < len(self.windows) else float("inf")
            during = [c for c in self.calls if w.start <= c.start < until and c.end]
            failed = [c for c in during if c.failed]
            slow = [c for c in during if c.end - c.start > 1.0]
            slow_by: dict[str, int] = {}
            for c in slow:
                slow_by[c.gateway] = slow_by.get(c.gateway, 0) + 1
            codes: dict[str, int] = {}
            for c in failed:
                codes[f"{c.op} {c.code}"] = codes.get(f"{c.op} {c.code}", 0) + 1
            last = max((c.end for c in failed), default=w.healed)
            by_gateway: dict[str, int] = {}
            for c in failed:
                by_gateway[c.gateway] = by_gateway.get(c.gateway, 0) + 1
            out.append({
                "fault": w.name,
                "held_s": round(w.healed - w.start, 1),
                "failed_calls": by_gateway,
                "failures": codes,  # "<call> <code>": how many
                "players_failed": len({c.player for c in failed}),
                "all_succeed_after_heal_s": round(max(0.0, last - w.healed), 1),
                "slowest_call_s": round(max((c.end - c.start for c in during), default=0), 1),
                "calls_over_1s": slow_by,
                **w.figures,
            })  # fmt: skip
        return out


def finish(call: Call, code: str = "") -> None:
    call.end, call.code = time.time(), code


def code_of(exc: BaseException) -> str:
    if isinstance(exc, CommandRefused):
        return str(exc.code)
    if isinstance(exc, grpc.aio.AioRpcError):
        detail = error_from(exc)  # the typed code, when the cluster gave one
        return f"{exc.code().name} {detail.code}" if detail else exc.code().name
    return type(exc).__name__


class RecordedPlayer(Player):
    """A scripted player whose every call goes into `history`."""

    def __init__(
        self,
        channel: grpc.aio.Channel,
        name: str,
        gateway: str,
        history: History,
        seed: int,
        think_s: float = 0.0,
    ) -> None:
        super().__init__(channel, name, seed=seed, think_s=think_s)
        self.gateway = gateway
        self.history = history

    async def rpc(self, method: Any, request: Any, auth: bool = True) -> Any:
        name = getattr(method, "_method", b"").decode().rsplit("/", 1)[-1] or "call"
        call = self.history.begin(self, name, getattr(request, "table_id", ""))
        try:
            answer = await super().rpc(method, request, auth)
        except BaseException as exc:
            finish(call, code_of(exc))
            raise
        finish(call)
        return answer

    def session_for(
        self, table_id: str, from_seq: int = 0, results_in_updates: bool = True
    ) -> PlaySession:
        return RecordedSession(self, table_id, from_seq, results_in_updates)


class RecordedSession(PlaySession):
    def __init__(
        self, player: RecordedPlayer, table_id: str, from_seq: int, results_in_updates: bool
    ) -> None:
        super().__init__(
            player.stub, table_id, player.auth, from_seq, results_in_updates=results_in_updates
        )
        self.player = player

    async def open(self, timeout_s: float = 30.0) -> table_pb2.TableView:
        call = self.player.history.begin(self.player, "open", self.table_id)
        try:
            view = await super().open(timeout_s)
        except BaseException as exc:
            finish(call, code_of(exc))
            raise
        finish(call)
        return view

    async def send(
        self,
        cmd: table_pb2.Command,
        expected_seq: int = 0,
        timeout_s: float = 30.0,
        command_id: str = "",
    ) -> gateway_pb2.CommandResult:
        call = self.player.history.begin(self.player, "command", self.table_id)
        call.command_id = command_id or uuid.uuid4().hex
        call.kind = cmd.WhichOneof("kind") or ""
        try:
            result = await super().send(cmd, expected_seq, timeout_s, call.command_id)
        except BaseException as exc:
            finish(call, code_of(exc))
            raise
        finish(call)
        call.seq, call.duplicate = int(result.seq), bool(result.duplicate)
        return result
