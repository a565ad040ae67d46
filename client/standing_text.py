"""The terminal's words for the standings (issue 60), as the browser says them
(services/gateway/web/standings.js): a board's page, a profile, what a match changed."""

from __future__ import annotations

from typing import Any

# The board a terminal word names: (board, key, what its figures count).
BOARDS = {
    "trophies": ("trophies", "", "trophies this week"),
    "trophies-all": ("trophies", "all", "trophies, all time"),
    "league": ("league", "", "diamonds won this week (the league)"),
    "scored": ("scored", "players", "scored points against players"),
    "scored-easy": ("scored", "easy", "scored points against the easy computer"),
    "scored-normal": ("scored", "normal", "scored points against the normal computer"),
    "scored-expert": ("scored", "expert", "scored points against the expert computer"),
    "rating": ("rating", "all", "rating (ranked casual matches)"),
    "tournaments": ("tournaments", "", "tournament wins this week"),
    "tournaments-all": ("tournaments", "all", "tournament wins, all time"),
}
LEVELS = {
    "players": "players",
    "easy": "the easy computer",
    "normal": "the normal computer",
    "expert": "the expert computer",
}


def ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def figure(board: str, value: float) -> str:
    """A board's figure as it counts: a rating with one decimal, the rest whole."""
    return f"{value:.1f}" if board == "rating" else str(round(value))


def change_line(c: Any) -> str:
    """One board a match moved: "Rating 1500.0 → 1510.4 (+10.4)"."""
    d = c.after - c.before
    moved = f"{figure(c.board, c.before)} → {figure(c.board, c.after)} "
    moved += f"({'+' if d >= 0 else '-'}{figure(c.board, abs(d))})"
    when = "all time" if c.key == "all" else "this week"
    return {
        "rating": f"Rating {moved}",
        "trophies": f"Trophies {when} {moved}",
        "league": f"League this week: diamonds won {moved}",
        "scored": f"Scored points against {LEVELS.get(c.key, c.key)} {moved}",
        "tournaments": f"Tournament wins {when} {moved}",
    }.get(c.board, f"{c.board} {moved}")


def board_lines(
    word: str, top: Any, mine: Any, names: dict[str, str], me: str, page: int
) -> list[str]:
    board, _, counts = BOARDS[word]
    pages = max(1, -(-top.total // 10))
    lines = [f"{counts}: page {page} of {pages}"]
    for e in top.entries:
        who = "you" if e.player_id == me else names.get(e.player_id, e.player_id)
        lines.append(f"  {ordinal(e.rank):>5}  {who:<20} {figure(board, e.score)}")
    if not top.entries:
        lines.append("  nobody on this board yet")
    lines.append(
        f"you: {ordinal(mine.rank)} of {top.total}, {figure(board, mine.score)}"
        if mine.rank
        else "you are not on this board yet"
    )
    return lines


def profile_lines(p: Any) -> list[str]:
    rated = p.rated_matches
    after = f" after {rated} ranked match{'es' if rated != 1 else ''}"
    lines = [f"rating {p.rating:.1f}" + (after if rated else " (no ranked match yet)")]
    if p.rating_course:
        lines.append("  its course: " + " → ".join(f"{r.rating:.1f}" for r in p.rating_course[-8:]))
    record = [f"{r.profile} {r.wins} won, {r.losses} lost" for r in p.record]
    lines.append("record: " + (" · ".join(record) if record else "no finished match yet"))
    lines.append(f"trophies {p.trophies} all time, {p.season_trophies} this week")
    league = f", {ordinal(p.league_rank)}" if p.league_rank else ", not ranked yet"
    lines.append(f"league this week: {p.league_diamonds} diamonds won{league}")
    scored = [f"{n} against {LEVELS.get(lv, lv)}" for lv, n in sorted(p.scored_points.items())]
    if scored:
        lines.append("scored points: " + ", ".join(scored))
    if p.tournament_wins:
        lines.append(f"tournaments won: {p.tournament_wins} ({p.season_tournament_wins} this week)")
    return lines
