"""Issue 29, tournaments: the bracket (pure). Seeding, byes as first-round walkovers, winners
moving on, ranks and the prize split, for every field size a tournament may have."""

from __future__ import annotations

import random

import pytest

from services.matchmaking.bracket import Bracket, bracket_size, prizes, seed_positions


def _play_out(bracket: Bracket, rng: random.Random) -> Bracket:
    """Record a random winner for every ready match until there is a champion."""
    dealt: set[tuple[int, int]] = set()
    while bracket.champion is None:
        ready = bracket.ready()
        assert ready, "no match to play and no champion"
        for m in ready:
            assert (m.round, m.slot) not in dealt  # a pairing is ready once
            dealt.add((m.round, m.slot))
            assert m.top is not None and m.bottom is not None
            bracket = bracket.record(m.round, m.slot, rng.choice([m.top, m.bottom]))
    return bracket


def test_seeds_meet_as_late_as_their_seeding_says() -> None:
    assert seed_positions(8) == [1, 8, 4, 5, 2, 7, 3, 6]
    for size in (2, 4, 8, 16, 32, 64):
        positions = seed_positions(size)
        assert sorted(positions) == list(range(1, size + 1))
        # Seeds 1 and 2 are in different halves; 1..4 in different quarters.
        half = size // 2
        assert (positions.index(1) < half) != (positions.index(2) < half)
        if size >= 4:
            quarters = {positions.index(s) // (size // 4) for s in (1, 2, 3, 4)}
            assert len(quarters) == 4


@pytest.mark.parametrize("field", [2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 64])
def test_every_field_plays_to_one_champion_in_n_minus_one_matches(field: int) -> None:
    players = [f"p{i}" for i in range(field)]
    bracket = Bracket(players)
    size = bracket_size(field)
    byes = size - field
    first = bracket.matches(1)
    # The byes go to the top seeds, as walkovers, never two in one match.
    walkovers = [m for m in first if (m.top is None) != (m.bottom is None)]
    assert len(walkovers) == byes and all(m.top is not None or m.bottom is not None for m in first)
    assert sorted(m.winner for m in walkovers) == sorted(players[:byes])  # type: ignore[type-var]
    played = _play_out(bracket, random.Random(field))
    matches = [m for r in range(1, played.rounds + 1) for m in played.matches(r)]
    assert sum(m.top is not None and m.bottom is not None for m in matches) == field - 1
    ranks = played.ranks()
    assert sorted(ranks) == sorted(players)  # everyone ranked once the champion is known
    assert list(ranks.values()).count(1) == 1 and list(ranks.values()).count(2) == 1
    assert ranks[played.champion] == 1  # type: ignore[index]


def test_a_recorded_winner_is_final_and_must_play_the_match() -> None:
    bracket = Bracket(["a", "b", "c", "d"])
    top = bracket.match(1, 0)
    assert (top.top, top.bottom) == ("a", "d")
    won = bracket.record(1, 0, "d")
    assert won.record(1, 0, "d").winners == won.winners  # the same again: no change
    with pytest.raises(ValueError):
        won.record(1, 0, "a")  # a second, different winner
    with pytest.raises(ValueError):
        bracket.record(1, 0, "b")  # not in that match
    with pytest.raises(ValueError):
        bracket.record(2, 0, "a")  # the final's players are not known yet
    assert bracket.winners == {}  # records never change the bracket they came from
    assert won.match(2, 0).top == "d" and won.match(2, 0).bottom is None


def test_ranks_and_prizes_share_out_the_pool_exactly() -> None:
    bracket = _play_out(Bracket([f"p{i}" for i in range(8)]), random.Random(3))
    ranks = bracket.ranks()
    assert sorted(ranks.values()) == [1, 2, 3, 3, 5, 5, 5, 5]
    paid = prizes(7_360, ranks, 8)
    assert sum(paid.values()) == 7_360
    champion = bracket.champion
    finalist = next(p for p, r in ranks.items() if r == 2)
    assert (paid[champion], paid[finalist]) == (5_152, 2_208)  # type: ignore[index]
    sixteen = _play_out(Bracket([f"p{i}" for i in range(13)]), random.Random(4))
    paid = prizes(1_001, sixteen.ranks(), 13)
    thirds = [paid[p] for p, r in sixteen.ranks().items() if r == 3]
    assert thirds == [125, 125] and sum(paid.values()) == 1_001


def test_a_field_out_of_range_or_with_a_player_twice_is_refused() -> None:
    for bad in ([], ["a"], [f"p{i}" for i in range(65)]):
        with pytest.raises(ValueError):
            Bracket(bad)
    with pytest.raises(ValueError):
        Bracket(["a", "b", "a"])
