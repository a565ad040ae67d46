"""Where a key's next record goes on the embedded log (services/common/embedded_log.py
`target_of`): a key's records are read in order across generations, a key two generations
behind and unread waits, a forgotten one is sent again first, and nothing goes back."""

from __future__ import annotations

from services.common.embedded_log import MAX_HOLD, Placed, Target, target_of
from services.common.log_port import KEPT, Receipt, Unsent

INC = "i1"
NOW = 100  # the current generation


def at(gen: int, incarnation: str = INC) -> Placed:
    return Placed(gen, 0, 7, incarnation)


def test_a_key_with_no_last_record_goes_to_the_current_generation() -> None:
    assert target_of(None, False, NOW, INC) == Target(NOW)
    assert target_of(Placed(-1, 0, -1, INC), False, NOW, INC) == Target(NOW)


def test_a_key_whose_last_record_is_unread_in_the_previous_generation_stays_there() -> None:
    assert target_of(at(NOW - 1), False, NOW, INC) == Target(NOW - 1)
    assert target_of(at(NOW - 1), True, NOW, INC) == Target(NOW)  # read: on it goes


def test_a_key_two_or_more_generations_behind_and_unread_waits_up_to_max_hold() -> None:
    for back in range(2, MAX_HOLD):
        assert target_of(at(NOW - back), False, NOW, INC).unsent is Unsent.WAIT
        assert target_of(at(NOW - back), True, NOW, INC) == Target(NOW)
    # A group MAX_HOLD periods behind loses its order rather than holding every key.
    assert target_of(at(NOW - MAX_HOLD), False, NOW, INC) == Target(NOW)


def test_a_key_never_goes_back_to_an_older_generation() -> None:
    """A producer whose clock is behind the one that wrote the key's last record."""
    assert target_of(at(NOW + 1), False, NOW, INC) == Target(NOW + 1)
    assert target_of(at(NOW + 1), True, NOW, INC) == Target(NOW + 1)


def test_a_key_whose_last_record_the_broker_forgot_is_not_sent() -> None:
    for read in (False, True):
        found = target_of(at(NOW - 1, "i0"), read, NOW, INC)
        assert found.unsent is Unsent.RESEND


def test_a_receipt_names_its_placement_and_nothing_else_names_one() -> None:
    """The receipt is the embedded log's own text (log_port.Receipt): written and read back
    whole; KEPT (Kafka's) and text another log wrote name no placement."""
    placed = Placed(12, 3, 4567, "a1b2")
    assert Placed.of(placed.receipt()) == placed
    for other in (KEPT, None, Receipt("kept"), Receipt("a1/2/3"), Receipt("i/x/0/1")):
        assert Placed.of(other) is None
