"""The partition suite's checker (issue 42): what must hold once every fault has healed, read from
the tables' durable streams and the players' history (tests/cluster/history.py). Each check returns
the problems it found (an empty list: it holds), so one failure names every table it saw."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as redis_asyncio

from bg.events.v1 import events_pb2
from services.gateway.feed import read_events
from tests.cluster.history import Call, History

# The player's acts each clock bounds: a turn's (moves, undo, the end of the turn, a double
# offered in it) and the taker's answer to a double.
TURN_ACTS = frozenset({"checkers_moved", "steps_undone", "turn_ended", "double_offered"})
ANSWER_ACTS = frozenset({"double_taken", "double_dropped"})
TURN_CLOCKS = frozenset({"turn_started", "awaiting_confirm", "boost_applied"})
# The players' calls a table replica serves (a Play stream's opening reads the table's view and
# reports the player present), and the commands that also wait on the wallet (a wagered table's
# raise or boost is held before it commits).
TABLE_CALLS = frozenset({"GetView", "GetMatchRecord", "open", "command"})
WALLET_COMMANDS = frozenset({"offer_double", "boost"})
WALLET_HOSTS = frozenset({"wallet", "postgres"})
PATIENCE_S = 1.0  # the longest a call of an untouched player may take


async def read_streams(redis_url: str, table_ids: list[str]) -> dict[str, list[Any]]:
    """Every table's whole event stream (its durable outbox), parsed."""
    client = redis_asyncio.Redis.from_url(redis_url)
    try:
        return {
            t: [events_pb2.TableEvent.FromString(raw) for _, raw in await read_events(client, t, 0)]
            for t in table_ids
        }
    finally:
        await client.aclose()


def contiguous(streams: dict[str, list[Any]]) -> list[str]:
    """Each table's events are seq 1, 2, ... n, with no gap and no repeat."""
    return [
        f"{t}: seqs {[e.seq for e in events][:50]}"
        for t, events in streams.items()
        if [e.seq for e in events] != list(range(1, len(events) + 1))
    ]


def acknowledged_kept(history: History, streams: dict[str, list[Any]]) -> list[str]:
    """No acknowledged command lost (its result's seq is in the table's durable stream) and
    none applied twice (no two acknowledged commands answered with one seq). An answer marked
    `duplicate` to a command the client sent once is the gateway's own retry of a call whose
    answer a fault lost: the table applied it once and says so (its first result's seq)."""
    problems = []
    by_table: dict[str, dict[int, str]] = defaultdict(dict)
    for call in history.acknowledged():
        last = len(streams.get(call.table_id, []))
        if call.seq > last:
            problems.append(f"{call.table_id}: command {call.command_id} at seq {call.seq} lost")
        other = by_table[call.table_id].setdefault(call.seq, call.command_id)
        if other != call.command_id:
            problems.append(f"{call.table_id}: {other} and {call.command_id} at seq {call.seq}")
    return problems


@dataclass
class Deadlines:
    timeouts: int = 0  # clocks that fired
    acts_on_clock: int = 0  # players' acts checked against a running clock
    problems: list[str] = field(default_factory=list)


def deadlines_kept(streams: dict[str, list[Any]]) -> Deadlines:
    """By the reference clock (the store's, I-40, in every event's `at_ms`): no timeout before
    its deadline as announced, and no act of a player accepted at or after the deadline in force
    (the last one a clock event announced for that kind of act). A clock's own commit (a timeout,
    and what it does: the turn passed, moves made for the seat) is not a player's act."""
    out = Deadlines()
    for table, events in streams.items():
        turn = answer = paused = 0
        clock_commit = -1
        for e in events:
            kind = e.WhichOneof("body") or ""
            body: Any = getattr(e, kind) if kind else None
            if kind == "timed_out":
                out.timeouts += 1
                clock_commit = e.at_ms
                if body.now_ms < body.deadline_ms or e.at_ms < body.deadline_ms:
                    out.problems.append(
                        f"{table} seq {e.seq}: timed out at {body.now_ms}, "
                        f"{body.deadline_ms - body.now_ms} ms before its deadline"
                    )
                continue
            due = turn if kind in TURN_ACTS else answer if kind in ANSWER_ACTS else 0
            if due and e.at_ms != clock_commit:  # a clock's own commit acts for the seat
                out.acts_on_clock += 1
                if e.at_ms >= due:
                    out.problems.append(
                        f"{table} seq {e.seq}: {kind} accepted {e.at_ms - due} ms after "
                        "its deadline"
                    )
            if kind in TURN_CLOCKS:
                turn = body.deadline_ms
            elif kind == "double_offered":  # the doubler's clock stops while the taker answers
                answer, paused = body.deadline_ms, max(0, turn - e.at_ms) if turn else 0
                turn = 0
            elif kind in ("double_taken", "double_withdrawn"):  # and runs on from the answer
                turn, answer = (e.at_ms + paused if paused else 0), 0
            elif kind in ("turn_ended", "match_ended", "match_closed"):
                turn = 0
            elif kind in ANSWER_ACTS:
                answer = 0
    return out


def untouched_kept(history: History, owner_of: Callable[[str], str]) -> list[str]:
    """Issue 58: a call for a table whose owner (`owner_of`, with every replica live) and
    gateway no fault touched while the call lasted never fails and never takes over
    PATIENCE_S. A fault touches its hosts; a wagered raise or boost also waits on the wallet.
    Returns the calls that broke it, with the faults they met."""
    problems = []
    for c, met in _untouched(history, owner_of):
        took = c.end - c.start
        if c.failed or took > PATIENCE_S:
            what = c.code if c.failed else f"{took:.2f} s"
            faults = ", ".join(w.name for w in met)
            problems.append(f"{_described(c)}: {what} ({faults})")
    return problems


def untouched_figures(history: History, owner_of: Callable[[str], str]) -> dict[str, Any]:
    """Per fault, the calls of the players it did not touch: how many, the slowest (s), and
    which call that was."""
    calls: dict[str, list[Call]] = {w.name: [] for w in history.windows}
    for c, met in _untouched(history, owner_of):
        calls[met[0].name].append(c)
    out: dict[str, Any] = {}
    for name, made in calls.items():
        slowest = max(made, key=lambda c: c.end - c.start, default=None)
        out[name] = {
            "calls": len(made),
            "slowest_s": round(slowest.end - slowest.start, 2) if slowest else 0,
            "slowest": _described(slowest) if slowest else "",
        }
    return out


def _described(c: Call) -> str:
    op = f"{c.op} {c.kind}" if c.kind else c.op
    return f"{op} on {c.table_id} via {c.gateway}"


def _untouched(history: History, owner_of: Callable[[str], str]) -> list[tuple[Call, list[Any]]]:
    """The table calls made while a fault lasted (from its start to the next fault's) that no
    fault they met touched, each with the faults it met."""
    w = history.windows
    spans = [
        (x, x.start, w[n + 1].start if n + 1 < len(w) else float("inf")) for n, x in enumerate(w)
    ]
    out = []
    for c in history.calls:
        if c.op not in TABLE_CALLS or not c.table_id or not c.end:
            continue
        met = [x for x, start, until in spans if start <= c.end and c.start < until]
        path = {c.gateway, owner_of(c.table_id)}
        if c.kind in WALLET_COMMANDS:
            path |= WALLET_HOSTS
        if met and not any(path & x.hosts for x in met):
            out.append((c, met))
    return out
