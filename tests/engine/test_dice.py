"""Dice from a committed seed (I-27), and the dice CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine import dice, profiles
from tests.engine.playout import play_match

ZERO = bytes(16)
FINGERPRINT = "374708fff7719dd5979ec875d56cd2286f6d3cf7ec317a3b25632aab28ec37bb"
FIRST = [1, 4, 2, 5, 6, 5, 1, 2, 4, 1, 5, 1, 2, 1, 2, 2, 4, 4, 2, 2]


def test_i27_test_vector() -> None:
    assert dice.fingerprint(ZERO) == FINGERPRINT
    assert dice.first_values(ZERO, 20) == FIRST


def test_draws_continue_the_stream_across_blocks() -> None:
    values, cursor = dice.draw(ZERO, 0, 7)
    more, cursor2 = dice.draw(ZERO, cursor, 100)  # crosses several 32-byte blocks
    assert list(values + more) == dice.first_values(ZERO, 107)
    assert cursor2 > 32 * 3


def test_values_are_uniform_enough() -> None:
    counts = [0] * 7
    for v in dice.first_values(bytes(range(16)), 60_000):
        counts[v] += 1
    assert all(9_500 < n < 10_500 for n in counts[1:])


def test_a_match_record_verifies_against_its_seed() -> None:
    import random

    run = play_match(profiles.wagered(3, 100), bytes(range(16)), random.Random(4))
    m = run.state.match
    ok, reason = dice.verify(run.state.secret.seed, m.fingerprint, m.rolls)
    assert ok, reason
    tampered = list(m.rolls)
    tampered[3] = (
        (tampered[3][1], tampered[3][0])
        if tampered[3][0] != tampered[3][1]
        else (1, 2)
        if tampered[3] != (1, 2)
        else (2, 1)
    )
    assert not dice.verify(run.state.secret.seed, m.fingerprint, tampered)[0]
    assert dice.verify(ZERO, m.fingerprint, m.rolls) == (
        False,
        "sha256(seed) does not match the published fingerprint",
    )


def test_dice_never_depend_on_who_plays() -> None:
    """I-27: the same seed gives the same rolls whatever the players do."""
    import random

    a = play_match(profiles.casual(), ZERO, random.Random(1), strategy="random")
    b = play_match(profiles.casual(), ZERO, random.Random(2), strategy="normal")
    n = min(len(a.state.match.rolls), len(b.state.match.rolls))
    assert a.state.match.rolls[:n] == b.state.match.rolls[:n]


def test_seed_must_be_16_bytes() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        dice.check_seed(b"short")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", *args], capture_output=True, text=True, timeout=60
    )


def test_cli_dice_and_verify() -> None:
    out = _cli("dice", ZERO.hex(), "--count", "20")
    assert out.returncode == 0 and out.stdout.split() == [str(v) for v in FIRST]
    good = _cli("verify", ZERO.hex(), FINGERPRINT, "1-4", "2-5", "6-5")
    assert good.returncode == 0 and good.stdout.startswith("OK")
    bad = _cli("verify", ZERO.hex(), FINGERPRINT, "1-4", "2-6")
    assert bad.returncode == 1 and "roll 2" in bad.stdout
    assert _cli("dice", "abc").returncode == 2


def test_cli_moves() -> None:
    import json

    out = _cli("moves", "4HPwATDgc/ABMA", "3", "1", "--json")
    doc = json.loads(out.stdout)
    assert len(doc) == 16 and doc[0]["play"] == "24/23 24/21"
    assert doc[0]["steps"] == [[24, 21], [24, 23]] or doc[0]["steps"] == [[24, 23], [24, 21]]
    text = _cli("moves", "4HPwATDgc/ABMA", "6", "6")
    assert "24/18(2) 13/7(2)" in text.stdout
    bad = _cli("moves", "nonsense", "3", "1")
    assert bad.returncode == 2 and "14 characters" in bad.stderr
