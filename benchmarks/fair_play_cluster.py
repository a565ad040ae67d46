"""`python -m benchmarks.fair_play_cluster`: the fair-play test on simulated players playing
through the real cluster (issue 61, item 3): scored 1-point matches over the gateway's gRPC, every
decision judged by the analysis service, the evidence and flags read back from it.

The players are benchmarks/bench_fair_play.py's models (honest people, and players a program
assists on every decision, half of them, or the hard ones), choosing here from the real board
each turn: an honest player by a softmax over GNU Backgammon's 0-ply equities of the legal plays
(test-only, GPL), an assisted one by GNU Backgammon 2-ply over its 0-ply's best 5. Each waits its
think time before it sends its play, at `SCALE` of a person's (the test reads log times within
a match, so their scale does not matter; a hundredth keeps the run to minutes). Two players a
table, every pair its own series of matches, all tables at once.

Prints, per player: the matches played, the decisions judged, its error rate, the test's value
after 5, 10 and 20 matches and when it was flagged; and per kind the mean evidence a match
adds, beside the offline simulation's for the same models (bench_fair_play: the one a
population's rates are measured on), so the two can be compared. Environment:
BG_BENCH_FAIR_PLAY_MATCHES (20), BG_BENCH_FAIR_PLAY_PAIRS (6).
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from benchmarks.bench_fair_play import Player, honest_population, pool, softmax_choice
from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from bg.table.v1 import table_pb2
from client.player import Player as Client
from engine.movegen import Play, legal_plays
from engine.position import Position
from infra.cluster.local_cluster import local_cluster
from services.analysis import fair_play

SCALE = 0.01
CHECKPOINTS = (5, 10, 20)


@dataclass
class Seat:
    """One simulated player at the cluster: its model, its client and what it did."""

    model: Player
    client: Client
    rng: random.Random
    think_s: float = 0.0  # the next play's wait
    matches: list[str] = field(default_factory=list)

    def choose(self, pos: Position, dice: tuple[int, int], _: random.Random) -> Play | None:
        plays = legal_plays(pos, dice)
        distinct = list({p.result: p for p in plays}.values())
        self.think_s = 0.0
        if len(distinct) < 2:
            return distinct[0] if distinct else None  # forced: not a decision
        zero = {p.result: _gnubg(p.result, 0) for p in distinct}
        ranked = sorted(distinct, key=lambda p: -zero[p.result])
        gap = zero[ranked[0].result] - zero[ranked[1].result]
        looks_close = self.model.looks_close(gap, self.rng)
        assisted = self.model.assisted(looks_close, self.rng)
        if assisted:
            top = ranked[:5]
            chosen = max(top, key=lambda p: _gnubg(p.result, 2))
        else:
            values = tuple(zero[p.result] for p in ranked)
            chosen = ranked[softmax_choice(values, self.model.temperature, self.rng)]
        self.think_s = SCALE * self.model.think_ms(assisted, looks_close, self.rng) / 1000
        return chosen

    def pause(self, cmd: table_pb2.Command) -> float:
        """The wait before a command: the think time before a play, nothing before the rest."""
        return self.think_s if cmd.HasField("submit_play") else 0.0


def _gnubg(result: Position, plies: int) -> float:
    """GNU Backgammon's equity of a play's result for its maker (the opponent then on roll)."""
    import gnubg

    context = gnubg.eval_context(0, plies, 0, 1, 0.0)
    board = gnubg.position_from_id(result.flip().gnubg_id())
    return -float(gnubg.evaluate(board, gnubg.cube_info(), context)[5])


async def _series(a: Seat, b: Seat, matches: int) -> None:
    options = table_pb2.TableOptions(profile="scored", match_length=1)
    for _ in range(matches):
        table = await a.client.create_table(options)
        await b.client.join(table.code)
        await asyncio.gather(a.client.play(table.table_id, 600), b.client.play(table.table_id, 600))
        a.matches.append(f"{table.table_id}-1")
        b.matches.append(f"{table.table_id}-1")


def _players(pairs: int, rng: random.Random) -> list[Player]:
    """Half honest (the strongest among them), the rest assisted: full, half and hard in turn."""
    honest = honest_population(pairs, rng)
    kinds = ("full", "half", "hard")
    assisted = [
        Player(kinds[i % 3], p.temperature, p.base_ms, p.delta)
        for i, p in enumerate(honest_population(pairs, rng))
    ]
    return honest + assisted


async def _evidence(address: str, seats: list[Seat], want: int) -> dict[str, Any]:
    """Each player's evidence once the analysis has judged all their matches (bounded)."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = analysis_pb2_grpc.AnalysisServiceStub(channel)
        found: dict[str, Any] = {}
        for _ in range(1800):
            for s in seats:
                found[s.client.player_id] = await stub.PlayerEvidence(
                    analysis_pb2.PlayerTrendRequest(player_id=s.client.player_id, limit=200)
                )
            if all(len(f.matches) >= want for f in found.values()):
                break
            await asyncio.sleep(1.0)
        return found


async def _run(data: Path, pairs: int, matches: int) -> None:
    env = {"BG_LOG_LEVEL": "WARNING", "BG_RATE_PER_S": "1000"}
    with local_cluster(data, env, timeout_s=120) as cluster:
        address = {s["name"]: s["address"] for s in cluster.state["services"]}
        rng = random.Random(61)
        async with grpc.aio.insecure_channel(address["gateway"]) as channel:
            seats = []
            for i, model in enumerate(_players(pairs, rng)):
                client = Client(channel, f"{model.kind}{i}", seed=i)
                seat = Seat(model, client, random.Random(i))
                client.choose = seat.choose
                client.think_s = seat.pause
                await client.login()
                seats.append(seat)
            order = seats[:pairs] + seats[pairs:]
            rng.shuffle(order)
            await asyncio.gather(
                *(_series(order[2 * i], order[2 * i + 1], matches) for i in range(pairs))
            )
        found = await _evidence(address["analysis"], seats, matches)
    _report(seats, found, matches)


def _report(seats: list[Seat], found: dict[str, Any], matches: int) -> None:
    print(f"   {len(seats)} players, {matches} scored 1-point matches each, through the cluster;")
    print(f"   threshold {fair_play.THRESHOLD:.0f} (the cluster's BG_FAIR_PLAY_THRESHOLD)")
    print(
        f"   {'player':<10} {'temp':>5} {'decisions':>9} {'error':>6} "
        + " ".join(f"{'S@' + str(c):>6}" for c in CHECKPOINTS)
        + f" {'flagged at':>10}"
    )
    per_kind: dict[str, list[float]] = {}
    for s in seats:
        evidence = list(reversed(found[s.client.player_id].matches))  # oldest first
        scores = [m.score for m in evidence]
        per_kind.setdefault(s.model.kind, []).extend(scores)
        values, value, flagged = [], 0.0, None
        for i, score in enumerate(scores, 1):
            value = max(0.0, value + score)
            values.append(value)
            if flagged is None and fair_play.flagged(value):
                flagged = i
        decisions = sum(m.decisions for m in evidence)
        lost = sum(m.checker_error_rate * m.decisions for m in evidence)
        cells = " ".join(
            f"{values[c - 1]:6.1f}" if len(values) >= c else f"{'-':>6}" for c in CHECKPOINTS
        )
        print(
            f"   {s.model.kind:<10} {s.model.temperature:5.3f} {decisions:9d} "
            f"{lost / max(1, decisions):6.1f} {cells} {flagged or '-':>10}"
        )
    offline = _offline(seats)
    print(f"   {'kind':<10} {'score a match: cluster':>24} {'offline simulation':>20}")
    for kind, scores in per_kind.items():
        mean, sd = statistics.fmean(scores), statistics.pstdev(scores)
        o_mean, o_sd = offline[kind]
        print(f"   {kind:<10} {mean:16.2f} ± {sd:5.2f} {o_mean:12.2f} ± {o_sd:5.2f}")


def _offline(seats: list[Seat]) -> dict[str, tuple[float, float]]:
    """The offline simulation's evidence per match for the same models (its pool of decisions)."""
    decisions = pool(1200, seed=161)
    rng = random.Random(7)
    out: dict[str, list[float]] = {}
    for s in seats:
        for _ in range(40):
            match = [s.model.decide(rng.choice(decisions), rng) for _ in range(25)]
            out.setdefault(s.model.kind, []).append(fair_play.match_evidence(match).score)
    return {k: (statistics.fmean(v), statistics.pstdev(v)) for k, v in out.items()}


def run() -> None:
    matches = int(os.environ.get("BG_BENCH_FAIR_PLAY_MATCHES", "20"))
    pairs = int(os.environ.get("BG_BENCH_FAIR_PLAY_PAIRS", "6"))
    data = Path(tempfile.mkdtemp(prefix="bg-fair-play-"))
    asyncio.run(_run(data, pairs, matches))


if __name__ == "__main__":
    run()
