"""Legal-play generation: engine.legal_plays vs GNU Backgammon's find_best_moves.

Both run over the same fixed corpus of 10,000 (position, dice) items from seeded random
self-play, alternately, three rounds each; the best round of each is reported and the ratio
engine/gnubg is the figure that holds across machines. gnubg is a test-only peer (GPL).

gnubg's position-evaluation cache is switched off: over repeated rounds of one corpus it would
otherwise answer from the cache (about 2.5x faster on the second round), measuring cache hits,
not move generation. find_best_moves also scores each play at 0-ply, which is the cost of the
peer as offered; the engine only generates.
"""

from __future__ import annotations

import time

from engine import legal_plays
from tests.engine.corpus import selfplay_corpus

ROUNDS = 3
ITEMS = 10_000


def run() -> None:
    import gnubg

    gnubg.command("set cache 0")
    corpus = selfplay_corpus(ITEMS, seed=7)
    boards = [gnubg.position_from_id(pos.gnubg_id()) for pos, _ in corpus]
    cube, ctx = gnubg.cube_info(), gnubg.eval_context()
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        n_ours = sum(len(legal_plays(pos, roll)) for pos, roll in corpus)
        ours.append(len(corpus) / (time.perf_counter() - started))
        started = time.perf_counter()
        n_theirs = sum(
            len(gnubg.find_best_moves(b, cube, ctx, roll))
            for b, (_, roll) in zip(boards, corpus, strict=True)
        )
        theirs.append(len(corpus) / (time.perf_counter() - started))
    assert n_ours == n_theirs, "the two generators disagree on the corpus"
    print(f"   corpus: {len(corpus)} (position, dice) items, {n_ours} plays in all")
    print(f"   engine.legal_plays:        {max(ours):9.0f} calls/s")
    print(f"   gnubg.find_best_moves:     {max(theirs):9.0f} calls/s")
    print(f"   ratio engine/gnubg:        {max(ours) / max(theirs):9.2f}")
