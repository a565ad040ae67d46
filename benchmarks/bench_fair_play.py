"""Simulated players for the fair-play test (issue 61, items 2 and 3): honest people and
program-assisted ones, their decisions judged by the analysis's own judge, the evidence fed to
services/analysis/fair_play.py match by match.

A pool of decisions from varied positions (seeded self-play, a fifth in back games) is judged
once: for each, the plays worth considering (the best 8 by the evaluator's 0-ply and by GNU
Backgammon's), what the analysis's judge would charge each (`Evaluator.judge_plays`: the play
against 0-ply's best, both one roll deeper), GNU Backgammon's 0-ply equities (how the honest
players choose) and its 2-ply best (the stronger, different program). Players then play matches
of `DECISIONS_PER_MATCH` decisions drawn from the pool:

- **honest**: a softmax over GNU Backgammon's 0-ply equities at their own temperature (from the
  strongest we protect to casual players), thinking longer where the decision looks close to
  them (their eye for a close decision is noisy);
- **assisted**: a program chooses every decision (`full`), half of them (`half`), or those that
  look close (`hard`), and answers in the time it takes to relay the program's choice, alike for
  hard and easy decisions. The program is GNU Backgammon 2-ply (a stronger, different program)
  or a noisy search one roll deeper of our own.

`calibrate` measures the detector's choice table on a pool of its own seed: a program (our noisy
search) against the reference honest player (a softmax over our own 0-ply at the reference
temperature), so the table owes nothing to GNU Backgammon's figures.
"""

from __future__ import annotations

import math
import os
import pickle
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from services.analysis import fair_play
from services.analysis.fair_play import Evidence

DECISIONS_PER_MATCH = 25  # a player's judged checker plays in a 1-point match, about
CANDIDATES = 8
NOISE = 0.015  # our program's noise on its one-roll-deeper equities (points)
# The reference player sees each play's 0-ply equity with this error (points): a person does not
# see our evaluator's numbers, and a reference that did would never differ from its 0-ply.
PERCEPTION = 0.02
POOL = Path("build") / "fair_play"
RATIO_CAP = 20.0  # no one decision's outcome weighs more than this either way


@dataclass(frozen=True)
class Judged:
    """One decision of the pool: its difficulty and, per play worth considering, what the judge
    charges it and how the programs and people see it."""

    gap: float
    lost: tuple[float, ...]  # the judge's charge per candidate
    ours_zero: tuple[float, ...]  # our 0-ply equity per candidate
    ours_deeper: tuple[float, ...]  # our one-roll-deeper equity per candidate
    gnubg_zero: tuple[float, ...]  # GNU Backgammon's 0-ply equity per candidate
    gnubg_best: int  # the candidate GNU Backgammon 2-ply plays
    back_game: bool


def build_pool(count: int, seed: int) -> list[Judged]:
    import gnubg

    from benchmarks.bench_judge import back_games
    from benchmarks.bench_strength import decisions
    from evaluator.evaluate import default

    zero, two = gnubg.eval_context(0, 0, 0, 1, 0.0), gnubg.eval_context(0, 2, 0, 1, 0.0)

    def score(result: object, ctx: object) -> float:
        board = gnubg.position_from_id(result.flip().gnubg_id())  # type: ignore[attr-defined]
        return -float(gnubg.evaluate(board, gnubg.cube_info(), ctx)[5])

    ev = default()
    items = [(p, d, False) for p, d in decisions(count - count // 5, seed=seed)]
    items += [(p, d, True) for p, d in back_games(count // 5, seed=seed + 1)]
    pool = []
    for pos, dice, back in items:
        ranked = ev.rank_plays(pos, dice)
        distinct = list({r.play.result: r for r in ranked}.values())
        if len(distinct) < 2:
            continue
        g0 = {r.play.result: score(r.play.result, zero) for r in distinct}
        by_gnubg = sorted(distinct, key=lambda r: -g0[r.play.result])
        chosen = list({r.play.result: r for r in distinct[:CANDIDATES] + by_gnubg[:CANDIDATES]})
        cands = [next(r for r in distinct if r.play.result == c) for c in chosen]
        deeper = {r.play.result: r.equity for r in ev.one_roll_deeper(cands)}
        best0 = distinct[0].play.result
        lost = tuple(0.0 if c == best0 else max(0.0, deeper[best0] - deeper[c]) for c in chosen)
        two_scores = {r.play.result: score(r.play.result, two) for r in by_gnubg[:5]}
        gnubg_best = max(two_scores, key=lambda c: two_scores[c])
        pool.append(
            Judged(
                gap=distinct[0].equity - distinct[1].equity,
                lost=lost,
                ours_zero=tuple(r.equity for r in cands),
                ours_deeper=tuple(deeper[c] for c in chosen),
                gnubg_zero=tuple(g0[c] for c in chosen),
                gnubg_best=chosen.index(gnubg_best),
                back_game=back,
            )
        )
    return pool


def pool(count: int, seed: int) -> list[Judged]:
    """The pool, judged once and kept in build/ (about a minute per 1,000 decisions)."""
    path = POOL / f"pool-{count}-{seed}.pickle"
    if path.exists():
        loaded: list[Judged] = pickle.loads(path.read_bytes())
        return loaded
    built = build_pool(count, seed)
    POOL.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(built))
    return built


def softmax_choice(values: tuple[float, ...], temperature: float, rng: random.Random) -> int:
    top = max(values)
    weights = [math.exp((v - top) / temperature) for v in values]
    return rng.choices(range(len(values)), weights)[0]


def our_program(d: Judged, rng: random.Random) -> int:
    """A noisy search one roll deeper of our own: a stand-in for another program."""
    noisy = [v + rng.gauss(0, NOISE) for v in d.ours_deeper]
    return max(range(len(noisy)), key=lambda i: noisy[i])


def gnubg_program(d: Judged, rng: random.Random) -> int:
    return d.gnubg_best


PROGRAMS: dict[str, Callable[[Judged, random.Random], int]] = {
    "gnubg 2-ply": gnubg_program,
    "our noisy 1-ply": our_program,
}


@dataclass(frozen=True)
class Player:
    kind: str  # honest | full | half | hard
    temperature: float  # their own play's softmax (points)
    base_ms: float  # their typical think time
    delta: float  # how much longer they think on a decision that looks close (in sigmas)
    program: str = "gnubg 2-ply"

    def looks_close(self, gap: float, rng: random.Random) -> bool:
        """Whether the decision looks close to them: their eye for it is noisy."""
        return gap * math.exp(rng.gauss(0, 0.6)) < fair_play.CLEAR_GAP

    def assisted(self, looks_close: bool, rng: random.Random) -> bool:
        return (
            self.kind == "full"
            or (self.kind == "half" and rng.random() < 0.5)
            or (self.kind == "hard" and looks_close)
        )

    def think_ms(self, assisted: bool, looks_close: bool, rng: random.Random) -> float:
        """A relayed answer takes about as long whatever the decision; a person's own, longer
        on what looks close to them."""
        if assisted:
            return math.exp(math.log(self.base_ms) + 0.2 + rng.gauss(0, 0.35))
        shift = self.delta * 0.45 / 2
        return math.exp(
            math.log(self.base_ms) + (shift if looks_close else -shift) + rng.gauss(0, 0.45)
        )

    def decide(self, d: Judged, rng: random.Random) -> Evidence:
        looks_close = self.looks_close(d.gap, rng)
        assisted = self.assisted(looks_close, rng)
        if assisted:
            chosen = PROGRAMS[self.program](d, rng)
        else:
            chosen = softmax_choice(d.gnubg_zero, self.temperature, rng)
        think = self.think_ms(assisted, looks_close, rng)
        return Evidence(d.gap, d.lost[chosen], max(1, int(think)))


def honest_population(count: int, rng: random.Random) -> list[Player]:
    """Temperatures log-uniform from casual to very strong, a tenth at the strongest we protect;
    think times 2-8 s; close decisions 0.6-1.6 sigmas longer."""
    players = []
    for i in range(count):
        strongest = i % 10 == 0
        t = 0.012 if strongest else math.exp(rng.uniform(math.log(0.012), math.log(0.12)))
        players.append(Player("honest", t, rng.uniform(2000, 8000), rng.uniform(0.6, 1.6)))
    return players


def flagged_after(
    player: Player, decisions: list[Judged], matches: int, rng: random.Random
) -> int | None:
    """The match after which the player is first flagged, or None."""
    s = 0.0
    for m in range(1, matches + 1):
        evidence = [player.decide(rng.choice(decisions), rng) for _ in range(DECISIONS_PER_MATCH)]
        s = fair_play.cusum(s, fair_play.match_evidence(evidence))
        if fair_play.flagged(s):
            return m
    return None


def gnubg_error_rate(player: Player, decisions: list[Judged], rng: random.Random) -> float:
    """The player's error by the judge, thousandths a decision, over 2,000 decisions."""
    lost = [player.decide(rng.choice(decisions), rng).lost for _ in range(2000)]
    return 1000 * sum(lost) / len(lost)


def run(count: int | None = None) -> None:
    size = count or int(os.environ.get("BG_BENCH_FAIR_PLAY_POOL", "1200"))
    honest_n = int(os.environ.get("BG_BENCH_FAIR_PLAY_HONEST", "300"))
    runs = int(os.environ.get("BG_BENCH_FAIR_PLAY_RUNS", "100"))
    decisions = pool(size, seed=161)
    rng = random.Random(61)
    print(f"   pool: {len(decisions)} decisions ({sum(d.back_game for d in decisions)} back games)")
    honest = honest_population(honest_n, rng)
    strongest = [p for p in honest if p.temperature <= 0.0121]
    rates = sorted(gnubg_error_rate(p, decisions, rng) for p in honest)
    print(
        f"   honest players' error rate by the judge: {rates[0]:.1f} .. {rates[-1]:.1f} "
        f"(median {rates[len(rates) // 2]:.1f}); strongest "
        f"{gnubg_error_rate(strongest[0], decisions, rng):.1f}"
    )
    checkpoints = (5, 10, 20, 50, 100)
    firsts = [flagged_after(p, decisions, 100, rng) for p in honest]
    strong_firsts = [f for p, f in zip(honest, firsts, strict=True) if p in strongest]
    _report("honest", firsts, checkpoints)
    _report("honest, strongest", strong_firsts, checkpoints)
    for program in PROGRAMS:
        for kind in ("full", "half", "hard"):
            base = [rng.choice(honest) for _ in range(runs)]
            cheats = [Player(kind, b.temperature, b.base_ms, b.delta, program) for b in base]
            found = [flagged_after(p, decisions, 50, rng) for p in cheats]
            _report(f"{kind} ({program})", found, checkpoints[:4])


def _report(name: str, firsts: list[int | None], checkpoints: tuple[int, ...]) -> None:
    shares = [
        100 * sum(1 for f in firsts if f is not None and f <= c) / len(firsts) for c in checkpoints
    ]
    cells = "  ".join(f"{c:>3}: {s:5.1f}%" for c, s in zip(checkpoints, shares, strict=True))
    print(f"   {name:<28} n={len(firsts):<4} flagged by match {cells}")


def calibrate(count: int = 600) -> None:
    """The choice table: P(outcome | program) / P(outcome | reference), by class."""
    decisions = pool(count, seed=1061)
    rng = random.Random(1061)
    seen: dict[str, Counter[tuple[str, str]]] = {"program": Counter(), "reference": Counter()}
    for _ in range(40):
        for d in decisions:
            kind = fair_play.kind_of(d.gap)
            program = our_program(d, rng)
            seen_by_eye = tuple(v + rng.gauss(0, PERCEPTION) for v in d.ours_zero)
            reference = softmax_choice(seen_by_eye, fair_play.REFERENCE_TEMPERATURE, rng)
            seen["program"][kind, fair_play.outcome_of(d.lost[program])] += 1
            seen["reference"][kind, fair_play.outcome_of(d.lost[reference])] += 1
    for kind in ("tie", "close", "clear"):
        cells, ceiling = [], RATIO_CAP
        for outcome in ("best", "near", "off", "wrong"):
            p = _share(seen["program"], kind, outcome)
            r = _share(seen["reference"], kind, outcome)
            # A larger loss is never more a program's than a smaller one: a play our 0-ply
            # dislikes and our 1-ply accepts is a deeper look's, which strong people take too.
            ceiling = min(ceiling, max(1 / RATIO_CAP, p / r))
            cells.append(f'"{outcome}": {ceiling:.2f}')
        print(f'    "{kind}": {{{", ".join(cells)}}},')


def _share(seen: Counter[tuple[str, str]], kind: str, outcome: str) -> float:
    total = sum(n for (k, _), n in seen.items() if k == kind)
    return (seen[kind, outcome] + 1) / (total + 4)  # add-one: no outcome is impossible


if __name__ == "__main__":
    calibrate() if sys.argv[1:] == ["calibrate"] else run()
