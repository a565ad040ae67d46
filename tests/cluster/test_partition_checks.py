"""The partition suite's checker (tests/cluster/partition_checks.py) catches what it is there to
catch: a gap or repeat in a table's events, an acknowledged command lost or two sharing a seq,
a timeout before its deadline, an act after one; and lets a clock's own commit act for a seat."""

from __future__ import annotations

from typing import Any

from bg.events.v1 import events_pb2
from tests.cluster.history import Call, History, Window
from tests.cluster.partition_checks import (
    acknowledged_kept,
    contiguous,
    deadlines_kept,
    untouched_figures,
    untouched_kept,
)


def _event(seq: int, at_ms: int, **body: Any) -> events_pb2.TableEvent:
    return events_pb2.TableEvent(table_id="t1", seq=seq, at_ms=at_ms, **body)


def _turn(seq: int, at_ms: int, deadline_ms: int) -> events_pb2.TableEvent:
    return _event(seq, at_ms, turn_started=events_pb2.TurnStarted(deadline_ms=deadline_ms))


def _moved(seq: int, at_ms: int) -> events_pb2.TableEvent:
    return _event(seq, at_ms, checkers_moved=events_pb2.CheckersMoved())


def _timed_out(seq: int, at_ms: int, deadline_ms: int) -> events_pb2.TableEvent:
    body = events_pb2.TimedOut(deadline_ms=deadline_ms, now_ms=at_ms)
    return _event(seq, at_ms, timed_out=body)


def test_a_gap_or_a_repeat_in_a_stream_is_found() -> None:
    good = [_moved(1, 0), _moved(2, 0)]
    assert contiguous({"t1": good}) == []
    assert contiguous({"t1": [_moved(1, 0), _moved(3, 0)]}) != []
    assert contiguous({"t1": [_moved(1, 0), _moved(1, 0)]}) != []


def test_a_lost_or_doubled_acknowledged_command_is_found() -> None:
    stream = {"t1": [_moved(1, 0), _moved(2, 0)]}
    history = History([Call("p", "g", "command", "t1", 0, 1, command_id="a", seq=2)])
    assert acknowledged_kept(history, stream) == []
    history.calls.append(Call("p", "g", "command", "t1", 0, 1, command_id="b", seq=2))
    assert acknowledged_kept(history, stream) == ["t1: a and b at seq 2"]
    lost = History([Call("p", "g", "command", "t1", 0, 1, command_id="c", seq=3)])
    assert acknowledged_kept(lost, stream) == ["t1: command c at seq 3 lost"]
    refused = History([Call("p", "g", "command", "t1", 0, 1, code="UNAVAILABLE", seq=0)])
    assert acknowledged_kept(refused, stream) == []  # never acknowledged: nothing promised


def test_early_timeouts_and_late_acts_are_found_and_a_clocks_commit_is_not_an_act() -> None:
    on_time = [_turn(1, 1000, 5000), _moved(2, 4999), _turn(3, 4999, 9000)]
    result = deadlines_kept({"t1": on_time})
    assert (result.problems, result.acts_on_clock) == ([], 1)
    late = [_turn(1, 1000, 5000), _moved(2, 5000)]
    assert deadlines_kept({"t1": late}).problems == [
        "t1 seq 2: checkers_moved accepted 0 ms after its deadline"
    ]
    early = [_turn(1, 1000, 5000), _timed_out(2, 4990, 5000)]
    assert deadlines_kept({"t1": early}).problems == [
        "t1 seq 2: timed out at 4990, 10 ms before its deadline"
    ]
    # The clock fires, plays for the seat in the same commit and starts the next turn, whose
    # deadline the next act is held to.
    fired = [
        _turn(1, 1000, 5000), _timed_out(2, 5001, 5000), _moved(3, 5001),
        _turn(4, 5001, 9000), _moved(5, 8000),
    ]  # fmt: skip
    result = deadlines_kept({"t1": fired})
    assert (result.problems, result.timeouts, result.acts_on_clock) == ([], 1, 1)


def test_the_doublers_clock_stops_while_the_taker_answers_and_runs_on_after() -> None:
    """The turn's deadline moves by the time the answer took (the engine resumes the doubler
    with the time they had left; no event restates it)."""
    offer = events_pb2.DoubleOffered(seat=0, cube=2, deadline_ms=9000)
    taken = events_pb2.DoubleTaken(seat=1, cube=2)
    stream = [
        _turn(1, 1000, 5000), _event(2, 2000, double_offered=offer),
        _event(3, 4000, double_taken=taken),  # 3 s left when offered: the turn runs to 7000
        _moved(4, 6500),
    ]  # fmt: skip
    assert deadlines_kept({"t1": stream}).problems == []
    late = [*stream[:3], _moved(4, 7000)]
    assert deadlines_kept({"t1": late}).problems == [
        "t1 seq 4: checkers_moved accepted 0 ms after its deadline"
    ]


def test_an_untouched_players_failed_or_slow_table_call_is_found_a_touched_ones_is_not() -> None:
    """Issue 58: the fault touches table-1 and Valkey; t2 is table-2's. A slow or failed call
    for t2 through either gateway is a problem; one for t1 (its owner cut), one through a
    gateway a later fault touches while it lasts, and a raise waiting on a cut wallet are not."""
    owner = {"t1": "table-1", "t2": "table-2"}.__getitem__
    cut = Window("table-1 | valkey", frozenset({"table-1", "valkey"}), 10.0)
    wallet = Window("wallet | postgres", frozenset({"wallet", "postgres"}), 20.0)
    gateway = Window("gateway-1 | valkey", frozenset({"gateway-1", "valkey"}), 30.0)
    history = History(windows=[cut, wallet, gateway])
    history.calls += [
        Call("p", "gateway-2", "GetView", "t2", 11.0, 11.2),  # fine
        Call("p", "gateway-2", "GetView", "t1", 11.0, 19.0),  # its owner cut: a stall allowed
        Call("p", "gateway-1", "GetView", "t2", 12.0, 14.5),  # slow: a problem
        Call("p", "gateway-2", "open", "t2", 13.0, 13.1, code="UNAVAILABLE"),  # a problem
        Call("p", "gateway-2", "command", "t2", 21.0, 23.0, kind="offer_double"),  # the wallet's
        Call("p", "gateway-2", "command", "t2", 21.0, 23.0, kind="roll"),  # a problem
        Call("p", "gateway-1", "command", "t2", 29.5, 31.0, kind="roll"),  # met gateway-1's cut
        Call("p", "gateway-2", "command", "t2", 5.0, 9.0, kind="roll"),  # before any fault
        Call("p", "gateway-2", "command", "t2", 32.0, 32.1, code="STALE_SEQ"),  # a rule's answer
        Call("p", "gateway-2", "CreateTable", "", 11.0, 18.0),  # not a table's call
    ]
    assert untouched_kept(history, owner) == [
        "GetView on t2 via gateway-1: 2.50 s (table-1 | valkey)",
        "open on t2 via gateway-2: UNAVAILABLE (table-1 | valkey)",
        "command roll on t2 via gateway-2: 2.00 s (wallet | postgres)",
    ]
    assert untouched_figures(history, owner) == {
        "table-1 | valkey": {
            "calls": 3,
            "slowest_s": 2.5,
            "slowest": "GetView on t2 via gateway-1",
        },
        "wallet | postgres": {
            "calls": 1,
            "slowest_s": 2.0,
            "slowest": "command roll on t2 via gateway-2",
        },
        "gateway-1 | valkey": {
            "calls": 1,
            "slowest_s": 0.1,
            "slowest": "command on t2 via gateway-2",
        },
    }
