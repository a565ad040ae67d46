"""The embedded log's generations by name, and which a keeper makes (issue 42: never one older
than the newest made less one, which may be read and deleted already)."""

from __future__ import annotations

from services.common.embedded_generations import (
    DELIVERY_SLACK_S,
    FORCE_AFTER_S,
    MAX_GENERATIONS,
    EventLog,
    TopicKeeper,
    newest_generations,
    series_of,
)
from services.common.topics import PLAIN


def test_a_generations_name_says_its_series_and_number() -> None:
    assert series_of("ns.table-events.g12.iab01") == ("ns.table-events", "ab01", 12)
    assert series_of("ns.table-events") is None
    newest = newest_generations(["t.g3.ia", "t.g5.ia", "t.g9.ib", "u.g1.ia", "plain", "t.g4.ia"])
    assert newest == {("t", "a"): 5, ("t", "b"): 9, ("u", "a"): 1}


def test_a_keeper_makes_the_current_and_the_next() -> None:
    assert list(TopicKeeper._to_make(10, [])) == [10, 11]
    assert list(TopicKeeper._to_make(10, [9, 10])) == [10, 11]


def test_a_keeper_behind_the_others_makes_nothing_old() -> None:
    # Its clock says 7; the others made up to 11: 7..9 may be read and deleted already.
    assert list(TopicKeeper._to_make(7, [9, 10, 11])) == []


def test_a_keeper_after_a_pause_makes_only_the_current_and_the_next() -> None:
    # The generations between were never written: a producer writes none older than the
    # newest made less one.
    assert list(TopicKeeper._to_make(14, [10, 11])) == [14, 15]


def test_an_unread_generation_is_forced_out_only_long_after_its_readers_could_read_it() -> None:
    # A minute's generations: MAX_GENERATIONS periods, the far later of the two.
    minute = EventLog(PLAIN, "embedded", rotate_s=60)
    assert minute.forced_at(100) == (100 + MAX_GENERATIONS) * 60_000
    # A second's: the count alone (30 s) came before the keeper could even delete a read one
    # (two periods and two slacks, 32 s), so every deletion was forced, unread or not.
    second = EventLog(PLAIN, "embedded", rotate_s=1)
    assert second.forced_at(100) == second.written_until(100) + int(FORCE_AFTER_S * 1000)
    assert second.forced_at(100) > second.written_until(100) + int(DELIVERY_SLACK_S * 1000)
