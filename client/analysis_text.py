"""A finished match's analysis (bg.analysis.v1.MatchAnalysis) and the player's finished matches
as terminal lines: `bgcluster play`'s `history` and `analysis` commands."""

from __future__ import annotations

from typing import Any

from bg.analysis.v1 import analysis_pb2


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(p: Any, name: str) -> str:
    marks = [(p.very_bad, "very bad"), (p.bad, "bad"), (p.doubtful, "doubtful")]
    counted = "".join(f", {n} {word}" for n, word in marks if n)
    return (
        f"{name}: error rate {p.error_rate:.1f} ({p.band or 'no decisions'}), "
        f"{_plural(p.decisions, 'decision')}{counted}, luck {p.luck:+.2f}"
    )


def analysis_lines(found: analysis_pb2.MatchAnalysis, names: dict[str, str]) -> list[str]:
    """What `analysis` prints: where it stands, or each player's summary and every marked
    decision, in order."""
    if found.state == analysis_pb2.ANALYSIS_STATE_QUEUED:
        ahead = f" ({_plural(found.ahead, 'match')} ahead)" if found.ahead else ""
        return [f"the analysis of {found.match_id} is in progress{ahead}: ask again shortly"]
    if found.state != analysis_pb2.ANALYSIS_STATE_DONE:
        return [f"{found.match_id} could not be analysed: {found.failure or 'no reason given'}"]
    seats = [names.get(p, p) for p in found.player_ids]
    out = [f"analysis of {found.match_id}:"]
    out += [f"  {summary_line(p, seats[n])}" for n, p in enumerate(found.players)]
    for d in found.decisions:
        if not d.mark:
            continue
        roll = f" {d.dice[0]}-{d.dice[1]}" if len(d.dice) == 2 else ""
        out.append(
            f"  game {d.game}, {seats[d.seat]}{roll}: {d.played}, best {d.best} "
            f"(-{d.lost:.3f}, {d.mark})"
        )
    if len(out) == 1 + len(found.players):
        out.append("  no decision marked doubtful or worse")
    return out
