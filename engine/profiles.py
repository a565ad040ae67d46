"""Rules profiles as data: one frozen, validated options object per table.

`wagered`, `scored` and `casual` are the three products (see ../shared/RULES.md). Every duration
is in milliseconds and lives here, so tests and load tests can run every clock fast with
`scaled(factor)`; the engine itself never reads a clock.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

ProfileName = Literal["wagered", "scored", "casual"]
Level = Literal["players", "easy", "normal", "expert"]
CpuLevel = Literal["easy", "normal", "expert"]
CPU_LEVELS: tuple[CpuLevel, ...] = ("easy", "normal", "expert")  # computer seats (I-26, I-31)
MATCH_LENGTHS = (1, 3, 5, 7)
SECOND = 1000
MINUTE = 60 * SECOND
DAY = 86_400 * SECOND


class OptionsError(ValueError):
    """Impossible table options; `field` names the option."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True, slots=True)
class RulesOptions:
    """Everything the engine needs to know about a table's rules."""

    profile: ProfileName
    match_length: int = 1
    # doubling cube (wagered: only in a match to 1, I-1; casual: house rule, I-22; scored: none)
    cube: bool = False
    cube_max: int = 64
    crawford: bool = False
    # scoring: gammon 2 and backgammon 3 unless switched off (scored: no backgammon, I-15)
    gammons: bool = True
    backgammons: bool = True
    # opening: wagered/casual play the opening dice; scored: the higher die then rolls (I-14)
    opening_dice_played: bool = True
    later_games_previous_winner_starts: bool = False
    # ending a turn: "done" (wagered: DONE needed), "confirm_window" (scored: 3 s, I-20),
    # "auto" (casual: the turn passes as soon as every die is used, I-23)
    turn_end: Literal["done", "confirm_window", "auto"] = "done"
    autoplay_single_outcome: bool = False  # wagered I-29
    closed_board_skips_roll: bool = False  # scored I-16
    no_move_window_ms: int = 0  # scored: "Got it" or 3 s (I-20); 0 = pass at once
    confirm_window_ms: int = 3 * SECOND
    # clocks
    turn_clock_ms: int | None = None  # wagered: 45 s per turn (rolling and moving, or answering)
    grace_ms: int = 0  # wagered: 1.5 s
    boosts_per_game: int = 0  # wagered: 2
    boost_ms: int = 10 * SECOND
    boost_cost: int = 10  # diamonds, spent by the table service before the boost applies
    auto_roll_pref: bool = False  # wagered AUTO ROLL preference (I-8)
    auto_roll_double_pause_ms: int = 2500  # I-8: when the player could double first
    auto_roll_after_ms: int | None = None  # casual: rolls itself after 25 s (I-21)
    move_time_ms: int | None = None  # scored: 30..600 s (I-17); None in test games
    move_warning_ms: int = 30 * SECOND
    next_game_delay_ms: int = 3 * SECOND
    disconnect_ms: int | None = None  # wagered 60 s (I-9); scored 3 min = leaving (I-18)
    # casual live: both players away this long closes the party with no winner (no clock would
    # ever move it on); one player away is waited for, since Leave is free (RULES 'leaving');
    # against the computer, the person away this long abandons it
    both_away_close_ms: int | None = None
    async_mode: bool = False  # casual turn-based mode (I-25)
    async_expiry_ms: int = 45 * DAY
    resign_allowed: bool = False  # wagered (I-5)
    leave_forfeits: bool = True  # wagered I-6; scored uses I-18; casual: the party is abandoned
    test_game: bool = False  # scored test games (I-19): recorded nowhere, take-back allowed
    level: Level = "players"  # scored level (I-31); casual Play vs CPU: easy/normal (I-26)
    rated: bool = False  # wagered rated (I-12) / casual ranked (I-26, I-28)
    bet: int = 0  # wagered stake per player (I-11)
    rematch_window_ms: int = 30 * SECOND  # I-32
    # A tournament's match (issue 29): no rematch (the bracket deals the next match); wagered
    # without a bet, the buy-in being the stake: no cover checks (I-4) and no paid boosts.
    tournament: bool = False

    def __post_init__(self) -> None:
        if self.profile not in ("wagered", "scored", "casual"):
            raise OptionsError("profile", f"unknown profile {self.profile!r}")
        if self.match_length not in MATCH_LENGTHS:
            raise OptionsError(
                "match_length", f"must be one of 1, 3, 5, 7, got {self.match_length}"
            )
        if self.cube_max < 2 or self.cube_max > 64 or self.cube_max & (self.cube_max - 1):
            raise OptionsError("cube_max", f"must be a power of two 2..64, got {self.cube_max}")
        if self.profile == "wagered":
            if self.cube != (self.match_length == 1):
                raise OptionsError(
                    "cube", "wagered tables use the cube exactly in a match to 1 (I-1)"
                )
            if self.tournament:
                if self.bet or self.boosts_per_game:
                    raise OptionsError("bet", "a tournament's match has no bet and no boosts")
            elif not (100 <= self.bet <= 2000 and self.bet % 100 == 0):
                raise OptionsError("bet", f"must be 100..2,000 in steps of 100, got {self.bet}")
        elif self.bet:
            raise OptionsError("bet", "only wagered tables have a bet")
        if self.profile == "scored" and self.cube:
            raise OptionsError("cube", "scored tables have no cube (I-15)")
        if self.move_time_ms is not None and self.move_time_ms <= 0:
            raise OptionsError("move_time_ms", "must be positive")
        for f in dataclasses.fields(self):
            if f.name.endswith("_ms"):
                value = getattr(self, f.name)
                if value is not None and value < 0:
                    raise OptionsError(f.name, "durations cannot be negative")
        if self.boosts_per_game < 0:
            raise OptionsError("boosts_per_game", "cannot be negative")
        if self.level != "players" and self.profile == "wagered":
            raise OptionsError("level", "no bot ever takes a wagered seat")

    def scaled(self, factor: float) -> RulesOptions:
        """The same rules with every duration multiplied by `factor` (tests and load tests)."""
        if factor <= 0:
            raise OptionsError("scale", f"must be positive, got {factor}")
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_ms") and value is not None:
                changes[f.name] = max(1, round(value * factor)) if value else 0
        return dataclasses.replace(self, **changes)

    @property
    def staked(self) -> bool:
        """Played for a bet (escrowed, covered, boosts paid): wagered, but not a tournament's
        match, whose buy-in was the stake."""
        return self.profile == "wagered" and not self.tournament

    @property
    def crawford_rule(self) -> bool:
        return self.cube and self.crawford and self.match_length > 1


def wagered(
    match_length: int = 1, bet: int = 100, rated: bool = False, tournament: bool = False
) -> RulesOptions:
    """`tournament`: a tournament's match, played for the bracket without a bet (`bet` 0)."""
    return RulesOptions(
        profile="wagered",
        match_length=match_length,
        cube=match_length == 1,
        turn_end="done",
        autoplay_single_outcome=True,
        turn_clock_ms=45 * SECOND,
        grace_ms=1500,
        boosts_per_game=0 if tournament else 2,
        auto_roll_pref=True,
        disconnect_ms=60 * SECOND,
        resign_allowed=True,
        leave_forfeits=True,
        rated=rated,
        bet=bet,
        tournament=tournament,
    )


def scored(
    match_length: int = 1, move_time_s: int = 180, test: bool = False, level: Level = "players"
) -> RulesOptions:
    if not 30 <= move_time_s <= 600:
        raise OptionsError("move_time_s", f"must be 30..600 seconds, got {move_time_s}")
    return RulesOptions(
        profile="scored",
        match_length=match_length,
        backgammons=False,
        opening_dice_played=False,
        later_games_previous_winner_starts=True,
        turn_end="confirm_window",
        closed_board_skips_roll=True,
        no_move_window_ms=3 * SECOND,
        move_time_ms=None if test else move_time_s * SECOND,
        disconnect_ms=3 * 60 * SECOND,
        leave_forfeits=False,
        test_game=test,
        level=level,
    )


def casual(
    match_length: int = 1,
    gammons: bool = True,
    cube: bool = False,
    crawford: bool = True,
    cube_max: int = 64,
    async_mode: bool = False,
    ranked: bool = False,
    cpu: CpuLevel | None = None,
) -> RulesOptions:
    return RulesOptions(
        profile="casual",
        match_length=match_length,
        cube=cube,
        cube_max=cube_max,
        crawford=crawford,
        gammons=gammons,
        backgammons=gammons,
        turn_end="auto",
        auto_roll_after_ms=None if async_mode else 25 * SECOND,
        both_away_close_ms=None if async_mode else 10 * MINUTE,
        async_mode=async_mode,
        resign_allowed=True,  # I-5's single, as wagered (docs/protocol.md, W-6)
        leave_forfeits=False,
        rated=ranked,
        level=cpu or "players",
    )


def tournament_match(rules: RulesOptions) -> RulesOptions:
    """A tournament's match: the profile's rules, flagged (no rematch; wagered without a bet).
    A casual one also loses on leaving or on a seat away 10 minutes (docs/protocol.md, W-5):
    casual has no clock, so a no-show (I-41) would otherwise hold the bracket up for ever."""
    if rules.profile == "casual":
        return dataclasses.replace(
            rules, tournament=True, leave_forfeits=True, disconnect_ms=10 * MINUTE
        )
    return dataclasses.replace(rules, tournament=True)


def for_profile(name: ProfileName, **options: object) -> RulesOptions:
    factories = {"wagered": wagered, "scored": scored, "casual": casual}
    if name not in factories:
        raise OptionsError("profile", f"unknown profile {name!r}")
    try:
        return factories[name](**options)  # type: ignore[operator, no-any-return]
    except TypeError as exc:
        raise OptionsError("options", str(exc)) from None
