"""Resign, leaving, disconnects, async expiry and rematches (RULES.md 'resign', 'leaving',
'disconnect' rows; I-5, I-6, I-9, I-18, I-25, I-32)."""

from __future__ import annotations

import pytest

from engine import commands as c
from engine import events as e
from engine import profiles
from engine.machine import Applied, new_match, next_deadline
from engine.position import Position
from engine.profiles import OptionsError, RulesOptions
from engine.state import GameRecord, Phase, TableState
from engine.vocabulary import GameResult
from tests.engine.scenario import SEED, clock, event, ok, refused, spot, types

START = (Position.start().mover, Position.start().mover)
W1 = profiles.wagered(1, 100)
W3 = profiles.wagered(3, 100)


def _ended(events: tuple[e.Event, ...]) -> e.MatchEnded:
    return next(ev for ev in events if isinstance(ev, e.MatchEnded))


def test_i5_resign_gives_a_single_times_the_cube() -> None:
    out = ok(spot(W1, START, cube=4, cube_owner=1), c.Resign(0), 10)
    game = next(ev for ev in out.events if isinstance(ev, e.GameEnded))
    assert (game.winner, game.result, game.points) == (1, "resign", 4)
    assert out.state.match.phase is Phase.MATCH_OVER


def test_i5_in_a_longer_match_the_next_game_follows() -> None:
    out = ok(spot(W3, START), c.Resign(1), 10)
    assert out.state.match.score == (1, 0) and out.state.match.phase is Phase.BETWEEN_GAMES
    refused(spot(profiles.scored(3), START), c.Resign(0), 10, "NOT_AVAILABLE")


def test_i6_leaving_a_wagered_match_forfeits_it() -> None:
    out = ok(spot(W3, START, score=(2, 0)), c.Leave(0), 10)
    assert (_ended(out.events).winner, _ended(out.events).reason) == (1, "left")
    refused(out.state, c.Roll(1), 20, "MATCH_OVER")


@pytest.mark.parametrize(
    ("games", "score", "leaver", "points"),
    [
        ((), (0, 0), 0, (-1, 1)),  # first game: a loss
        ((GameRecord(1, 0, GameResult.SINGLE, 1, 1),), (1, 0), 0, (0, 0)),  # leader leaves: nothing
        ((GameRecord(1, 1, GameResult.SINGLE, 1, 1),), (0, 1), 0, (-1, 1)),  # behind: a loss
        ((GameRecord(1, 0, GameResult.SINGLE, 1, 1),), (1, 1), 1, (1, -1)),  # level: a loss
    ],
)
def test_i18_scored_leaving(
    games: tuple[GameRecord, ...], score: tuple[int, int], leaver: int, points: tuple[int, int]
) -> None:
    st = spot(profiles.scored(5), START, games=games, score=score)
    ended = _ended(ok(st, c.Leave(leaver), 10).events)
    assert (ended.winner, ended.scored_points) == (1 - leaver, points)


def test_i18_one_game_match_leave_is_a_loss() -> None:
    st = spot(profiles.scored(1), START)
    assert _ended(ok(st, c.Leave(1), 10).events).scored_points == (1, -1)


def test_casual_leaving_abandons_the_party() -> None:
    out = ok(spot(profiles.casual(), START), c.Leave(0), 10)
    assert types(out.events) == ["table_closed"]
    assert event(e.TableClosed, out.events[0]).reason == "abandoned"


def test_i9_away_60_s_forfeits_while_the_opponent_is_here() -> None:
    st = ok(spot(W3, START, clock_deadline_ms=None), c.Disconnect(1), 1000).state
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.seat, due.at_ms) == ("away", 1, 61_000)
    back = ok(st, c.Reconnect(1), 30_000)  # back in time: nothing happens
    assert back.events == (e.PlayerBack(1),)
    out = clock(st)
    assert (_ended(out.events).winner, _ended(out.events).reason) == (0, "away")


def test_i9_the_clock_keeps_playing_while_away() -> None:
    st = ok(spot(W3, START), c.Disconnect(0), 0).state
    due = next_deadline(st.match)
    assert due is not None and due.kind == "turn"  # 46.5 s comes before the 60 s
    assert clock(st).state.match.turn == 1


def test_i9_both_away_opponent_returns_in_time_first_forfeits() -> None:
    st = ok(spot(W3, START, clock_deadline_ms=None), c.Disconnect(0), 0).state
    st = ok(st, c.Disconnect(1), 20_000).state
    waiting = clock(st)  # seat 0's 60 s end while seat 1 is away
    assert waiting.events == (e.AwayExpired(0, 80_000),)
    out = ok(waiting.state, c.Reconnect(1), 70_000)
    assert (_ended(out.events).winner, _ended(out.events).reason) == (1, "away")


def test_i9_both_away_nobody_returns_the_table_closes() -> None:
    st = ok(spot(W3, START, clock_deadline_ms=None), c.Disconnect(0), 0).state
    st = ok(st, c.Disconnect(1), 20_000).state
    out = clock(clock(st).state)
    assert types(out.events) == ["table_closed"]
    assert event(e.TableClosed, out.events[0]).reason == "both_away"
    assert out.state.match.phase is Phase.CLOSED


def test_casual_live_both_away_ten_minutes_closes_the_party_with_no_winner() -> None:
    # RULES 'disconnect' row for casual live tables (no clock would ever move them on): one
    # player away is waited for; both away for 10 minutes from the later drop closes the party.
    moving = spot(profiles.casual(), START, phase=Phase.MOVING, dice=(6, 5))
    st = ok(moving, c.Disconnect(0), 0).state
    assert next_deadline(st.match) is None  # one away: the table waits for them
    st = ok(st, c.Disconnect(1), 30_000).state
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.at_ms) == ("away", 630_000)
    out = clock(st)
    assert types(out.events) == ["table_closed"]
    assert event(e.TableClosed, out.events[0]).reason == "both_away"
    assert out.state.match.phase is Phase.CLOSED


def test_casual_live_one_player_back_lifts_the_both_away_close() -> None:
    moving = spot(profiles.casual(), START, phase=Phase.MOVING, dice=(6, 5))
    st = ok(moving, c.Disconnect(0), 0).state
    st = ok(ok(st, c.Disconnect(1), 10).state, c.Reconnect(1), 20).state
    assert next_deadline(st.match) is None
    async_party = ok(spot(profiles.casual(async_mode=True), START), c.Disconnect(0), 0).state
    due = next_deadline(ok(async_party, c.Disconnect(1), 10).state.match)
    assert due is not None and due.kind == "async_expiry"  # I-25 rules turn-based tables


def test_casual_vs_the_computer_away_ten_minutes_abandons_it() -> None:
    # W-2: the computer is never away, so the one person away for 10 minutes is enough.
    moving = spot(profiles.casual(cpu="easy"), START, phase=Phase.MOVING, dice=(6, 5))
    st = ok(moving, c.Disconnect(0), 5_000).state
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.at_ms) == ("away", 605_000)
    out = clock(st)
    assert event(e.TableClosed, out.events[0]).reason == "abandoned"


def test_scored_away_three_minutes_is_leaving() -> None:
    st = ok(spot(profiles.scored(3, test=True), START), c.Disconnect(0), 0).state
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.at_ms) == ("away", 180_000)
    assert _ended(clock(st).events).reason == "away"


def test_presence_commands_are_checked() -> None:
    st = spot(W3, START)
    refused(st, c.Reconnect(0), 10, "NOT_AWAY")
    away = ok(st, c.Disconnect(0), 10).state
    refused(away, c.Disconnect(0), 20, "ALREADY_AWAY")


def test_i25_async_casual_closes_after_45_idle_days() -> None:
    opts = profiles.casual(async_mode=True)
    st = spot(opts, START, last_activity_ms=0)
    due = next_deadline(st.match)
    assert due is not None and (due.kind, due.at_ms) == ("async_expiry", 45 * 86_400_000)
    out = clock(st)
    assert event(e.TableClosed, out.events[0]).reason == "async_expired"
    moved = ok(st, c.Roll(0), 10 * 86_400_000).state
    due2 = next_deadline(moved.match)
    assert due2 is not None and due2.at_ms == 55 * 86_400_000  # a move restarts the 45 days


def test_i25_async_turns_notify_the_player() -> None:
    opts = profiles.casual(async_mode=True)
    st = spot(opts, START, dice=(3, 1), phase=Phase.MOVING)
    out = ok(ok(st, c.Move(0, 8, 5), 10).state, c.Move(0, 6, 5), 20)
    assert e.TurnStarted(1, None, your_turn_notice=True) in out.events


def test_i32_rematch_within_30_s() -> None:
    over = ok(spot(W3, START), c.Leave(0), 10).state
    offered = ok(over, c.OfferRematch(1), 20)
    assert offered.events == (e.RematchOffered(1, 30_020),)
    refused(offered.state, c.AcceptRematch(1), 30, "NOT_OFFERED")
    agreed = ok(offered.state, c.AcceptRematch(0), 1000)
    assert agreed.events == (e.RematchAgreed(),)
    expired = clock(offered.state)
    assert expired.events == (e.RematchExpired(),)
    refused(expired.state, c.AcceptRematch(0), 40_000, "NOT_OFFERED")


def test_a_tournaments_match_has_no_rematch_and_wagered_no_bet_or_boost() -> None:
    """Issue 29: the bracket deals a tournament's next match, so none is offered at the table;
    a wagered tournament's match is played for the bracket (no bet, no paid boost)."""
    staked = profiles.wagered(3, 100)
    played = profiles.wagered(3, 0, tournament=True)
    assert (played.bet, played.boosts_per_game, played.cube) == (0, 0, False)
    over = ok(spot(played, START), c.Leave(0), 10).state
    refused(over, c.OfferRematch(1), 20, "NOT_AVAILABLE")
    refused(spot(played, START), c.Boost(0), 10, "NOT_AVAILABLE")
    ok(ok(spot(staked, START), c.Leave(0), 10).state, c.OfferRematch(1), 20)
    with pytest.raises(OptionsError) as bet:
        profiles.wagered(1, 100, tournament=True)
    assert bet.value.field == "bet"


def test_i19_a_scored_test_game_records_nothing_when_it_ends() -> None:
    st = spot(profiles.scored(1, test=True), START)
    ended = _ended(ok(st, c.Leave(1), 10).events)
    assert ended.winner == 0 and ended.scored_points == (0, 0)  # not (1, -1): recorded nowhere


@pytest.mark.parametrize("profile", [W3, profiles.scored(3), profiles.casual(3)])
def test_i10_an_operator_closes_a_stuck_match_undecided(profile: RulesOptions) -> None:
    """An operator's close: the table closes with no winner (the wallet refunds every stake on
    its TableClosed, I-10); a finished match is not closed again; no seat sends it."""
    out = ok(spot(profile, START, cube=2, cube_owner=0, score=(1, 0)), c.OperatorClose(), 10)
    assert types(out.events) == ["table_closed"]
    closed = out.events[0]
    assert isinstance(closed, e.TableClosed) and closed.reason == "operator_closed"
    assert out.state.match.phase is Phase.CLOSED and out.state.match.winner is None
    refused(out.state, c.OperatorClose(), 20, "MATCH_OVER")
    refused(out.state, c.Roll(0), 20, "MATCH_OVER")


def _played_out(state: TableState, budget: int = 400) -> Applied:
    """Let the clock alone act (nobody sends a command) until the match is over or closed."""
    out = None
    for _ in range(budget):
        out = clock(state)
        state = out.state
        if state.match.phase in (Phase.MATCH_OVER, Phase.CLOSED):
            return out
    raise AssertionError("the clock never ended the match")


def test_i41_a_no_show_is_away_from_the_deal_and_forfeits_a_wagered_match_at_60_s() -> None:
    dealt = new_match(W3, SEED, 1000, absent=(False, True))
    away = [ev for ev in dealt.events if isinstance(ev, e.PlayerAway)]
    assert away == [e.PlayerAway(1, 61_000)]  # told at once, with when it ends
    assert dealt.state.match.away_since_ms == (None, 1000)
    out = _played_out(dealt.state)
    ended = _ended(out.events)
    assert (ended.winner, ended.reason) == (0, "away")
    assert out.state.match.ended_ms == 61_000  # not a moment early


def test_i41_a_no_show_who_connects_in_time_plays_on() -> None:
    dealt = new_match(W3, SEED, 1000, absent=(False, True))
    back = ok(dealt.state, c.Reconnect(1), 20_000)
    assert back.events == (e.PlayerBack(1),) and back.state.match.away_since_ms == (None, None)
    due = next_deadline(back.state.match)
    assert due is not None and due.kind != "away"


def test_i41_i9_nobody_shows_up_to_a_wagered_match_it_closes_and_returns_the_stakes() -> None:
    out = _played_out(new_match(W3, SEED, 0, absent=(True, True)).state)
    closed = event(e.TableClosed, out.events[-1])
    assert closed.reason == "both_away" and out.state.match.phase is Phase.CLOSED


def test_i41_i18_a_scored_no_show_leaves_after_3_minutes_and_loses() -> None:
    # A test game (no move timer), so only the away rule acts for the no-show
    out = _played_out(new_match(profiles.scored(3, test=True), SEED, 0, absent=(True, False)).state)
    ended = _ended(out.events)
    assert (ended.winner, ended.reason) == (1, "away")  # I-18's loss (a test game: unrecorded)
    assert out.state.match.ended_ms == 180_000


def test_i41_w2_a_casual_table_nobody_joins_closes_after_10_minutes() -> None:
    dealt = new_match(profiles.casual(), SEED, 0, absent=(True, True))
    assert [ev for ev in dealt.events if isinstance(ev, e.PlayerAway)] == [
        e.PlayerAway(0, None), e.PlayerAway(1, None),
    ]  # fmt: skip
    out = _played_out(dealt.state)
    assert event(e.TableClosed, out.events[-1]).reason == "both_away"
    assert out.state.match.ended_ms == 600_000


def test_i41_w5_a_casual_tournament_no_show_loses_after_10_minutes() -> None:
    """Casual has no clock: in a tournament a seat away 10 minutes loses the match, and leaving
    forfeits it, so the bracket moves on (docs/protocol.md, W-5)."""
    rules = profiles.tournament_match(profiles.casual(3))
    out = _played_out(new_match(rules, SEED, 0, absent=(False, True)).state)
    ended = _ended(out.events)
    assert (ended.winner, ended.reason) == (0, "away") and out.state.match.ended_ms == 600_000
    left = ok(spot(rules, START), c.Leave(0), 10)
    assert (_ended(left.events).winner, _ended(left.events).reason) == (1, "left")
    # Outside a tournament one casual player away is waited for (RULES 'leaving': Leave is free).
    plain = new_match(profiles.casual(3), SEED, 0, absent=(False, True)).state
    due = next_deadline(plain.match)
    assert due is None or due.kind != "away"


def test_w6_a_casual_game_and_one_against_the_computer_may_be_resigned_as_i5_says() -> None:
    """Issue 41, item 16: resigning gives the game as a single times the cube (I-5), in casual
    play and against the computer; the next game follows in a longer match. Scored play has no
    resign (RULES 'resign' row: use leave)."""
    for rules in (profiles.casual(3, cube=True), profiles.casual(3, cpu="expert")):
        out = ok(spot(rules, START, cube=2, cube_owner=0), c.Resign(1), 10)
        game = next(ev for ev in out.events if isinstance(ev, e.GameEnded))
        assert (game.winner, game.result, game.points) == (0, "resign", 2 if rules.cube else 1)
        assert out.state.match.phase is Phase.BETWEEN_GAMES
    refused(spot(profiles.scored(3), START), c.Resign(0), 10, "NOT_AVAILABLE")
