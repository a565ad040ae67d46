"""Write the fixed vectors tests/evaluator/test_network.py checks numpy's inference against:
positions from a seeded self-play (contact and race, both sides), each encoded by
evaluator/encoding.py and run through wildbg's original ONNX network by onnxruntime.

`python -m evaluator.tools.reference_vectors contact.onnx race.onnx tests/evaluator/reference.json`
(the ONNX files: wildbg's `nets` branch, see evaluator/weights/PROVENANCE.md). A developer's
tool: onnxruntime is a dev dependency, never a service's."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import onnxruntime

from engine.position import Position
from evaluator.encoding import contact_inputs, is_race, race_inputs, signed_counts
from evaluator.evaluate import Evaluator

PER_PHASE = 24
FACES = range(1, 7)


def positions(seed: int = 27) -> list[Position]:
    """Positions met in seeded games between the evaluator and a random player, until there are
    PER_PHASE contact and PER_PHASE race positions."""
    rng = random.Random(seed)
    evaluator = Evaluator()
    found: dict[bool, list[Position]] = {False: [], True: []}
    while min(len(v) for v in found.values()) < PER_PHASE:
        pos = Position.start()
        for turn in range(400):
            if not sum(pos.mover) or not sum(pos.opponent):
                break
            race = bool(is_race(signed_counts([pos]))[0])
            if len(found[race]) < PER_PHASE and rng.random() < 0.3:
                found[race].append(pos)
            dice = (rng.choice(FACES), rng.choice(FACES))
            ranked = evaluator.rank_plays(pos, dice)
            if ranked:
                pick = ranked[0] if turn % 2 == 0 else rng.choice(ranked)
                pos = pick.play.result
            pos = pos.flip()
    return found[False] + found[True]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("contact", type=Path)
    parser.add_argument("race", type=Path)
    parser.add_argument("target", type=Path)
    args = parser.parse_args()
    sessions = {
        False: onnxruntime.InferenceSession(str(args.contact)),
        True: onnxruntime.InferenceSession(str(args.race)),
    }
    rows = []
    for pos in positions():
        counts = signed_counts([pos])
        race = bool(is_race(counts)[0])
        inputs = (race_inputs if race else contact_inputs)(counts).astype(np.float32)
        session = sessions[race]
        (out,) = session.run(None, {session.get_inputs()[0].name: inputs})
        rows.append(
            {"id": pos.gnubg_id(), "race": race, "probabilities": [float(p) for p in out[0]]}
        )
    args.target.write_text(json.dumps({"source": "onnxruntime", "positions": rows}, indent=1))
    print(f"{args.target}: {len(rows)} positions")


if __name__ == "__main__":
    main()
