"""Regenerate perft.txt: (position ID, dice, distinct plays) counted by GNU Backgammon.

Run from the repository root: `python -m tests.engine.data.make_perft`. The rows come from
seeded random self-play, chosen to cover every category; the counts are gnubg's.
"""

from __future__ import annotations

from pathlib import Path

from tests.engine.corpus import category, selfplay_corpus
from tests.engine.gnubg_oracle import gnubg_plays

PER_CATEGORY = 45
OUT = Path(__file__).with_name("perft.txt")


def main() -> None:
    chosen: dict[str, list[tuple[str, tuple[int, int]]]] = {}
    seen: set[tuple[str, tuple[int, int]]] = set()
    for pos, dice in selfplay_corpus(60000, seed=2024):
        key = (pos.gnubg_id(), dice)
        cat = category(pos, dice)
        bucket = chosen.setdefault(cat, [])
        if key in seen or len(bucket) >= PER_CATEGORY:
            continue
        seen.add(key)
        bucket.append(key)
    lines = ["# position-id d1 d2 plays  (counts from GNU Backgammon; see make_perft.py)"]
    for cat in sorted(chosen):
        lines.append(f"# {cat}")
        for pid, (d1, d2) in chosen[cat]:
            count = len([m for m in gnubg_plays(pid, (d1, d2)) if m])
            lines.append(f"{pid} {d1} {d2} {count}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {sum(len(v) for v in chosen.values())} rows to {OUT}")


if __name__ == "__main__":
    main()
