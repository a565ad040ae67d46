"""The analysis of a finished match (issue 28, requirement 3): per decision the evaluator's best
choice, the one played, the equity it lost and GNU Backgammon's mark for it, the luck of each
roll; per player the error rate per decision and its band, and the luck in total.

The input is the match as its players made it (`Game`s of `Turn`s and `CubeAction`s, each from
the acting seat), so the analysis depends on nothing but the record; the caller turns the
archive's events into it. Checker plays are judged at 1-ply: the play made and 0-ply's best play
looked at one roll deeper together, never a play against a rival judged at another depth, nor
against the best of several noisy looks (issue 61; benchmarks/bench_judge.py), in cubeless money
equity; cube actions in
match winning chances (evaluator/match_equity.py), as the computer seats decide them, the loss
then turned into points of equity at the score (gnubg's normalisation), so every decision's mark
means the same. Forced plays (one distinct
result) are not decisions; nor is the cube in a match to 1: by match equity it is worth nothing
there (the game is the match), while a wagered match to 1 stakes diamonds on it, money play this
model does not judge. A roll made instead of a double (a missed double) is not judged either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from engine.bots import MatchScore
from engine.movegen import Step, format_steps, legal_plays
from engine.position import Position
from engine.steps import apply_step
from evaluator.bots import MARKET, match_cube_values
from evaluator.evaluate import ROLLS, Evaluator, default, equities
from evaluator.match_equity import match_winning_chance

# gnubg's default marks, in points of equity lost by one decision.
DOUBTFUL, BAD, VERY_BAD = 0.04, 0.08, 0.16
BANDS = (
    (2, "supernatural"),
    (5, "world class"),
    (8, "expert"),
    (12, "advanced"),
    (18, "intermediate"),
    (26, "casual"),
    (35, "beginner"),
)


def band(error_rate: float) -> str:
    """gnubg's rating of an error rate (thousandths of a point per decision)."""
    return next((name for limit, name in BANDS if error_rate < limit), "awful")


def mark(lost: float) -> str:
    if lost >= VERY_BAD:
        return "very bad"
    if lost >= BAD:
        return "bad"
    return "doubtful" if lost >= DOUBTFUL else ""


@dataclass(frozen=True)
class Turn:
    seat: int
    dice: tuple[int, int]
    steps: tuple[Step, ...]  # the whole play, from the mover's side; () when nothing could move
    judged: bool = True  # False: not the player's choice (the clock played it): applied only
    think_ms: int = 0  # from the roll to the play (0: not known)


@dataclass(frozen=True)
class CubeAction:
    seat: int
    action: Literal["double", "take", "drop"]


@dataclass(frozen=True)
class Game:
    score: tuple[int, int]  # before the game
    crawford: bool
    actions: tuple[Turn | CubeAction, ...]


@dataclass(frozen=True)
class Decision:
    game: int  # 1-based
    seat: int
    kind: Literal["move", "double", "take", "drop"]
    position_id: str  # gnubg's, from the acting seat
    dice: tuple[int, int] | None
    played: str
    best: str
    lost: float  # equity (moves) or match winning chance (cube) lost, >= 0
    mark: str
    luck: float | None = None  # moves: the roll's equity against the average roll
    action: int = 0  # its place in its game's `actions`, so a caller finds the move it judges
    best_steps: tuple[Step, ...] = ()  # moves: the best play's steps, to draw it
    gap: float = 0.0  # moves: 0-ply's best play over its second (the decision's difficulty)
    think_ms: int = 0  # moves: from the roll to the play (0: not known)


@dataclass
class PlayerSummary:
    decisions: int = 0
    lost: float = 0.0
    luck: float = 0.0
    marks: dict[str, int] = field(default_factory=lambda: {"doubtful": 0, "bad": 0, "very bad": 0})

    @property
    def error_rate(self) -> float:
        """Mean loss per decision, in thousandths (gnubg's "error rate")."""
        return 1000 * self.lost / self.decisions if self.decisions else 0.0

    @property
    def band(self) -> str:
        return band(self.error_rate)


@dataclass(frozen=True)
class Analysis:
    decisions: tuple[Decision, ...]
    players: tuple[PlayerSummary, PlayerSummary]


def analyse(
    games: Sequence[Game],
    match_length: int,
    evaluator: Evaluator | None = None,
    luck: bool = True,
) -> Analysis:
    """The match judged. Without `luck` each roll's luck is left None (`roll_luck` works it out
    later: two thirds of the CPU, for an analysis nobody may read)."""
    ev = evaluator or default()
    decisions: list[Decision] = []
    players = (PlayerSummary(), PlayerSummary())
    for number, game in enumerate(games, 1):
        sides = [Position.start().mover, Position.start().mover]  # each seat's own numbering
        cube, offered = 1, False
        for index, action in enumerate(game.actions):
            seat = action.seat
            pos = Position(sides[seat], sides[1 - seat])
            if isinstance(action, Turn):
                found = _turn(ev, number, pos, action, luck) if action.judged else None
                after = pos
                for step in action.steps:
                    after = apply_step(after, step)
                sides[seat], sides[1 - seat] = after.mover, after.opponent
            elif match_length == 1:
                found = None  # the cube of a match to 1: not judged (see above)
            else:
                score = _score(
                    game, match_length, seat if action.action == "double" else 1 - seat, cube
                )
                found = _cube(
                    number, pos if action.action == "double" else pos.flip(), action, score, offered
                )
                if action.action == "double":
                    offered = True
                else:
                    offered = False
                    cube *= 2 if action.action == "take" else 1
            if found is None:
                continue
            found = replace(found, action=index)
            decisions.append(found)
            summary = players[seat]
            summary.decisions += 1
            summary.lost += found.lost
            summary.luck += found.luck or 0.0
            if found.mark:
                summary.marks[found.mark] += 1
    return Analysis(tuple(decisions), players)


def _turn(ev: Evaluator, game: int, pos: Position, turn: Turn, luck: bool) -> Decision | None:
    played_result = pos
    for step in turn.steps:
        played_result = apply_step(played_result, step)
    at_zero = ev.rank_plays(pos, turn.dice)
    distinct = list({r.play.result: r for r in at_zero}.values())  # best first
    if len(distinct) < 2:
        return None  # forced (or nothing to move): not a decision
    # The best plays and the one made, compared at one depth (evaluator.judge_ranked).
    ranked, played = ev.judge_ranked(at_zero, played_result)
    if played is None:
        raise ValueError(f"game {game}: {turn} is not a legal play from {pos.gnubg_id()}")
    best = ranked[0]
    lost = max(0.0, best.equity - played.equity)
    return Decision(
        game,
        turn.seat,
        "move",
        pos.gnubg_id(),
        turn.dice,
        format_steps(pos, turn.steps),
        best.play.notation(pos),
        lost,
        mark(lost),
        luck=roll_luck(ev, pos, turn.dice) if luck else None,
        best_steps=best.play.steps,
        gap=distinct[0].equity - distinct[1].equity,
        think_ms=turn.think_ms,
    )


def roll_luck(ev: Evaluator, pos: Position, dice: tuple[int, int]) -> float:
    """The roll's worth: the best play's 0-ply equity with these dice, minus its average over
    the 21 rolls (a roll that leaves nothing to play is worth the position passed). Every roll's
    plays go through the network in one batch: one call, not 21 (half the analysis's CPU went
    to the calls' overhead, issue 61)."""
    batch: list[Position] = []
    spans: list[tuple[tuple[int, int], int, int, int]] = []
    for roll, weight in ROLLS:
        first = len(batch)
        # Each play's result with the opponent on roll; nothing to play: the position passed.
        batch += [p.result.flip() for p in legal_plays(pos, roll)] or [pos.flip()]
        spans.append((roll, weight, first, len(batch)))
    theirs = equities(ev.probabilities(batch))  # for the opponent, then on roll
    value = {roll: -float(theirs[first:end].min()) for roll, _, first, end in spans}
    average = sum(weight * value[roll] for roll, weight, _, _ in spans) / 36
    return value[(min(dice), max(dice))] - average


def _score(game: Game, length: int, doubler: int, cube: int) -> MatchScore:
    me, them = length - game.score[doubler], length - game.score[1 - doubler]
    return MatchScore(me, them, cube, not game.crawford and min(me, them) == 1)


def _point_value(score: MatchScore) -> float:
    """What one point is worth in match winning chance at this score (half the swing between
    winning and losing a single game): gnubg's normalisation of cube errors to equity."""
    done = score.crawford_done or min(score.me_away, score.them_away) == 1
    won = match_winning_chance(score.me_away - 1, score.them_away, done)
    lost = match_winning_chance(score.me_away, score.them_away - 1, done)
    return max((won - lost) / 2, 1e-6)


def _cube(
    game: int, doubler_pos: Position, action: CubeAction, score: MatchScore, offered: bool
) -> Decision | None:
    """A cube action judged in match winning chances, by the computer seats' own rule
    (evaluator/bots.py): a double too good to make loses what playing on would have won over
    the drop; one before its market, how far before (beyond MARKET of the taker's drop point);
    a take or a drop, what the other answer would have kept."""
    no_double, take, drop = match_cube_values(doubler_pos, score)
    if action.action == "double":
        dead = score.crawford_done and score.them_away == 1
        if no_double >= drop and not dead:
            best, lost = "no double", no_double - min(take, drop)  # too good: play on
        elif drop - take > MARKET and not dead:
            best, lost = "no double", drop - take - MARKET  # early: the market is still there
        else:
            best, lost = "double", max(0.0, no_double - min(take, drop))
        pid = doubler_pos.gnubg_id()
    else:
        # The taker's chances: 1 - the doubler's.
        chosen = take if action.action == "take" else drop
        lost = max(0.0, chosen - min(take, drop))
        best = "take" if take <= drop else "drop"
        pid = doubler_pos.flip().gnubg_id()
    lost /= _point_value(score)  # in points of equity, as a checker play's loss
    return Decision(
        game, action.seat, action.action, pid, None, action.action, best, lost, mark(lost)
    )
