"""`python -m engine`: legal plays, dice streams and dice verification from the command line.

python -m engine moves <position-id> <d1> <d2> [--json]
python -m engine dice <seed-hex> --count N
python -m engine verify <seed-hex> <fingerprint> <roll> [<roll> ...]   (rolls like 4-1)
"""

from __future__ import annotations

import argparse
import json
import sys

from engine import dice as dice_stream
from engine.movegen import legal_plays
from engine.position import Position


def _moves(args: argparse.Namespace) -> int:
    try:
        position = Position.from_gnubg_id(args.position_id)
        plays = legal_plays(position, (args.d1, args.d2))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        doc = [
            {
                "play": p.notation(position),
                "steps": [list(s) for s in p.steps],
                "position_id": p.result.gnubg_id(),
            }
            for p in plays
        ]
        print(json.dumps(doc))
    elif not plays:
        print("no legal play")
    else:
        for p in plays:
            print(f"{p.notation(position):<24} {p.result.gnubg_id()}")
    return 0


def _seed(text: str) -> bytes:
    try:
        return dice_stream.check_seed(bytes.fromhex(text))
    except ValueError:
        raise argparse.ArgumentTypeError("the seed is 32 hex digits (16 bytes)") from None


def _dice(args: argparse.Namespace) -> int:
    if args.count < 0:
        print("error: --count must be >= 0", file=sys.stderr)
        return 2
    print(" ".join(map(str, dice_stream.first_values(args.seed, args.count))))
    return 0


def _roll(text: str) -> tuple[int, int]:
    parts = text.replace(",", "-").split("-")
    if len(parts) != 2 or not all(p.isdigit() and 1 <= int(p) <= 6 for p in parts):
        raise argparse.ArgumentTypeError(f"a roll is two dice like 4-1, got {text!r}")
    return int(parts[0]), int(parts[1])


def _verify(args: argparse.Namespace) -> int:
    ok, reason = dice_stream.verify(args.seed, args.fingerprint, args.rolls)
    print(("OK: " if ok else "MISMATCH: ") + reason)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engine",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    moves = sub.add_parser("moves", help="legal plays in GNU Backgammon notation")
    moves.add_argument("position_id")
    moves.add_argument("d1", type=int)
    moves.add_argument("d2", type=int)
    moves.add_argument("--json", action="store_true")
    moves.set_defaults(run=_moves)
    dice = sub.add_parser("dice", help="the first N die values of a seed's stream (I-27)")
    dice.add_argument("seed", type=_seed)
    dice.add_argument("--count", type=int, default=20)
    dice.set_defaults(run=_dice)
    verify = sub.add_parser(
        "verify", help="check a match record's rolls against seed and fingerprint"
    )
    verify.add_argument("seed", type=_seed)
    verify.add_argument("fingerprint")
    verify.add_argument("rolls", type=_roll, nargs="*")
    verify.set_defaults(run=_verify)
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
