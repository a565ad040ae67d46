"""A single-elimination bracket (issue 29, tournaments): pure, no I/O.

A field of N players (2..64) plays in a bracket of S = the next power of two, in log2(S) rounds.
Seeds go where the standard seeding puts them (seed 1 and seed 2 can meet only in the final,
1..4 only from the semifinals on), and the S - N byes go to the top seeds, so no match has two
byes and every bye is a first-round walkover. A match's winner takes the upper or lower seat of
its match in the next round. Everything a tournament needs (who plays whom, who is still in, the
final ranks, the prize split) is derived from the seeded field and the winners recorded so far,
so a crash loses nothing that was stored and re-deriving deals nothing twice.

Ranks: the champion is 1, the finalist 2, the semifinal losers share 3, the quarterfinal losers
share 5, and so on (a loser of round r of R ranks 2**(R - r) + 1).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_FIELD = 64


def bracket_size(field: int) -> int:
    if not 2 <= field <= MAX_FIELD:
        raise ValueError(f"a bracket holds 2..{MAX_FIELD} players, not {field}")
    size = 2
    while size < field:
        size *= 2
    return size


def seed_positions(size: int) -> list[int]:
    """The seed (1-based) at each of the bracket's first-round positions, top to bottom: for 8,
    [1, 8, 4, 5, 2, 7, 3, 6]."""
    order = [1]
    while len(order) < size:
        n = 2 * len(order)
        order = [s for seed in order for s in (seed, n + 1 - seed)]
    return order


@dataclass(frozen=True, slots=True)
class Match:
    """Match `slot` (0-based, top to bottom) of round `round` (1-based)."""

    round: int
    slot: int
    top: str | None  # None: not known yet, or a bye in round 1
    bottom: str | None
    winner: str | None

    @property
    def ready(self) -> bool:
        """Both players known and no winner yet: to be dealt."""
        return self.top is not None and self.bottom is not None and self.winner is None


class Bracket:
    """`field`: the players in seed order (the first is seed 1). `winners`: round -> slot ->
    the winner recorded so far."""

    def __init__(self, field: list[str], winners: dict[int, dict[int, str]] | None = None) -> None:
        if len(set(field)) != len(field):
            raise ValueError("a player is in the field twice")
        self.field = list(field)
        self.size = bracket_size(len(field))
        self.rounds = self.size.bit_length() - 1
        self.winners = {r: dict(s) for r, s in (winners or {}).items()}

    def _first_round(self, slot: int) -> tuple[str | None, str | None]:
        positions = seed_positions(self.size)
        top, bottom = positions[2 * slot], positions[2 * slot + 1]
        n = len(self.field)
        return (
            self.field[top - 1] if top <= n else None,
            self.field[bottom - 1] if bottom <= n else None,
        )

    def match(self, round_: int, slot: int) -> Match:
        if not (1 <= round_ <= self.rounds and 0 <= slot < self.size >> round_):
            raise ValueError(f"no match {slot} in round {round_}")
        if round_ == 1:
            top, bottom = self._first_round(slot)
            winner = self.winners.get(1, {}).get(slot)
            if winner is None and (top is None) != (bottom is None):
                winner = top or bottom  # a bye: a walkover
            return Match(1, slot, top, bottom, winner)
        top = self.match(round_ - 1, 2 * slot).winner
        bottom = self.match(round_ - 1, 2 * slot + 1).winner
        return Match(round_, slot, top, bottom, self.winners.get(round_, {}).get(slot))

    def matches(self, round_: int) -> list[Match]:
        return [self.match(round_, slot) for slot in range(self.size >> round_)]

    def ready(self) -> list[Match]:
        """Every match whose two players are known and that has no winner: the ones to deal."""
        return [m for r in range(1, self.rounds + 1) for m in self.matches(r) if m.ready]

    def record(self, round_: int, slot: int, winner: str) -> Bracket:
        """The bracket with `winner` recorded for that match (once: a second, different winner
        is an error; the same one again changes nothing)."""
        found = self.match(round_, slot)
        if found.top is None or found.bottom is None or winner not in (found.top, found.bottom):
            raise ValueError(f"{winner!r} does not play match {slot} of round {round_}")
        if found.winner is not None and found.winner != winner:
            raise ValueError(f"match {slot} of round {round_} was won by {found.winner!r}")
        winners = {r: dict(s) for r, s in self.winners.items()}
        winners.setdefault(round_, {})[slot] = winner
        return Bracket(self.field, winners)

    @property
    def champion(self) -> str | None:
        return self.match(self.rounds, 0).winner

    def ranks(self) -> dict[str, int]:
        """The ranks known so far: every eliminated player's, and the champion's once there is
        one (a player still in has none yet)."""
        out: dict[str, int] = {}
        for r in range(1, self.rounds + 1):
            for m in self.matches(r):
                if m.winner is None or m.top is None or m.bottom is None:
                    continue
                loser = m.bottom if m.winner == m.top else m.top
                out[loser] = 2 ** (self.rounds - r) + 1
        if self.champion is not None:
            out[self.champion] = 1
        return out


# Shares of the prize pool (after the house fee) by rank, per field size: a rank shared by
# several players (3, 5, ...) splits its line evenly. Percent; each line sums to 100.
PRIZE_SHARES: list[tuple[int, dict[int, int]]] = [
    (4, {1: 100}),  # up to 4 players
    (8, {1: 70, 2: 30}),
    (16, {1: 50, 2: 25, 3: 25}),  # the two semifinal losers share 3rd's 25
    (MAX_FIELD, {1: 40, 2: 20, 3: 20, 5: 20}),
]


def prizes(pool: int, ranks: dict[str, int], field: int) -> dict[str, int]:
    """Each ranked player's prize from `pool` (whole diamonds; the rounding's remainder goes to
    the champion, so the prizes sum to the pool exactly)."""
    shares = next(s for most, s in PRIZE_SHARES if field <= most)
    out: dict[str, int] = {}
    for rank, percent in shares.items():
        holders = sorted(p for p, r in ranks.items() if r == rank)
        for player in holders:
            out[player] = pool * percent // 100 // len(holders)
    champion = next(p for p, r in ranks.items() if r == 1)
    out[champion] += pool - sum(out.values())
    return out
