"""Dice from a committed seed (I-27): every roll decided before the first move.

At match creation the server draws a 16-byte seed from a CSPRNG (outside the engine) and
publishes sha256(seed) as hex. Die values come from the stream: for block j = 0, 1, 2, ...:
H = HMAC-SHA256(key=seed, msg=b"bg-dice" + j.to_bytes(8, "big")); for each byte b of H in order,
if b < 252 emit b % 6 + 1. Rolls draw values in order: an opening roll one value for the first
seat then one for the second (again on a tie); a normal roll two, (first die, second die).

The engine keeps only a cursor (bytes of the stream consumed) in the table state; the seed stays
in the server-only part of the state.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Sequence

SEED_BYTES = 16
BLOCK = 32  # bytes of one HMAC-SHA256 block


def fingerprint(seed: bytes) -> str:
    """The public commitment: sha256(seed) as hex."""
    return hashlib.sha256(seed).hexdigest()


def check_seed(seed: bytes) -> bytes:
    if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
        raise ValueError(f"a dice seed is {SEED_BYTES} bytes")
    return seed


def _block(seed: bytes, j: int) -> bytes:
    return hmac.new(seed, b"bg-dice" + j.to_bytes(8, "big"), hashlib.sha256).digest()


def values_from(seed: bytes, cursor: int) -> Iterator[tuple[int, int]]:
    """(die value, cursor after it) pairs from byte offset `cursor` of the stream on."""
    j, offset = divmod(cursor, BLOCK)
    while True:
        block = _block(seed, j)
        for i in range(offset, BLOCK):
            b = block[i]
            if b < 252:
                yield b % 6 + 1, j * BLOCK + i + 1
        j += 1
        offset = 0


def draw(seed: bytes, cursor: int, count: int) -> tuple[tuple[int, ...], int]:
    """`count` die values from `cursor`; returns them and the new cursor."""
    out: list[int] = []
    if count <= 0:
        return (), cursor
    stream = values_from(seed, cursor)
    while len(out) < count:
        value, cursor = next(stream)
        out.append(value)
    return tuple(out), cursor


def first_values(seed: bytes, count: int) -> list[int]:
    return list(draw(seed, 0, count)[0])


def verify(seed: bytes, commitment: str, rolls: Sequence[Sequence[int]]) -> tuple[bool, str]:
    """Do the seed, its fingerprint and a match record's rolls agree? Returns (ok, reason).

    `rolls` are the values in the order they were drawn: opening rolls as (first seat, second
    seat) pairs, normal rolls as (die 1, die 2) pairs.
    """
    if len(seed) != SEED_BYTES:
        return False, f"seed must be {SEED_BYTES} bytes, got {len(seed)}"
    if fingerprint(seed) != commitment.strip().lower():
        return False, "sha256(seed) does not match the published fingerprint"
    stream = values_from(seed, 0)
    for n, roll in enumerate(rolls, 1):
        for value in roll:
            expected = next(stream)[0]
            if value != expected:
                return False, f"roll {n} {tuple(roll)} differs from the seed's stream ({expected})"
    return True, f"{len(rolls)} rolls agree with the seed and its fingerprint"
