"""Hints (issue 28, requirement 4) from a seat's view: the best plays best first, only where
the rules allow help and only at the start of the move, and one evaluation per view however
often a player asks."""

from __future__ import annotations

import pytest

from bg.events.v1 import events_pb2
from bg.table.v1 import table_pb2
from engine.position import Position
from services.analysis import hints
from services.analysis.hints import Hints
from services.common.errors import ServiceError


def _view(**options: object) -> table_pb2.TableView:
    start = Position.start()
    return table_pb2.TableView(
        table_id="t1", seq=7, seat=0, decider=0, phase=events_pb2.Phase.PHASE_MOVING,
        dice=[3, 1], own=list(start.mover), opponent=list(start.opponent),
        options=table_pb2.TableOptions(**options),  # type: ignore[arg-type]
    )  # fmt: skip


async def test_one_evaluation_per_view_and_the_best_plays_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[int] = []
    real = hints.hint

    def counted(view: table_pb2.TableView, limit: int) -> object:
        made.append(view.seq)
        return real(view, limit)

    monkeypatch.setattr(hints, "hint", counted)
    memory = Hints(remembered=2)
    view = _view(profile="casual", level="expert")
    first = await memory.for_view(view, 3)
    assert first.seq == 7 and first.plays[0].notation == "8/5 6/5" and len(first.plays) == 3
    again = await memory.for_view(view, 1)
    assert [p.notation for p in again.plays] == ["8/5 6/5"] and made == [7]
    for seq in (8, 9):  # older views are forgotten past `remembered`
        view.seq = seq
        await memory.for_view(view, 3)
    view.seq = 7
    await memory.for_view(view, 3)
    assert made == [7, 8, 9, 7]


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"profile": "wagered", "bet": 100}, "HINT_NOT_ALLOWED"),
        ({"profile": "casual", "level": "easy", "rated": True}, "HINT_NOT_ALLOWED"),
        ({"profile": "scored"}, "HINT_NOT_ALLOWED"),  # people, not a test game
    ],
)
async def test_no_hint_where_help_is_not_allowed(options: dict[str, object], code: str) -> None:
    with pytest.raises(ServiceError) as refused:
        await Hints().for_view(_view(**options), 3)
    assert refused.value.code == code


async def test_a_scored_test_game_gets_one_but_not_after_a_step_or_on_the_other_turn() -> None:
    assert (await Hints().for_view(_view(profile="scored", test_game=True), 3)).plays
    stepped = _view(profile="casual", level="normal")
    stepped.steps.add(**{"from": 8, "to": 5})
    waiting = _view(profile="casual", level="normal")
    waiting.decider = 1
    for view in (stepped, waiting):
        with pytest.raises(ServiceError) as refused:
            await Hints().for_view(view, 3)
        assert refused.value.code == "HINT_NOT_NOW"


@pytest.mark.parametrize("limit", [-1, 11, 1_000_000])
async def test_a_limit_outside_0_to_10_is_refused(limit: int) -> None:
    """Issue 41, item 7: HintRequest.limit is 0 (= 3) or 1..10, as the proto says."""
    with pytest.raises(ServiceError) as refused:
        await Hints().for_view(_view(profile="casual", level="expert"), limit)
    assert (refused.value.code, refused.value.field) == ("INVALID_LIMIT", "limit")


@pytest.mark.parametrize("limit", [0, 5, 10])
async def test_every_listed_play_has_its_equity_from_its_own_chances_best_first(
    limit: int,
) -> None:
    """Issue 41, item 8: each listed play's equity and six chances come from one evaluation
    (one roll deeper for every listed play), so they agree, and the list never rises."""
    view = _view(profile="casual", level="expert")
    view.dice[:] = [6, 2]
    got = await Hints().for_view(view, limit)
    assert len(got.plays) == (limit or 3)
    points = (1, 2, 3, -1, -2, -3)
    for play in got.plays:
        assert len(play.probabilities) == 6 and abs(sum(play.probabilities) - 1) < 1e-3
        from_chances = sum(w * p for w, p in zip(points, play.probabilities, strict=True))
        assert abs(from_chances - play.equity) < 1e-3, play
    equities = [p.equity for p in got.plays]
    assert equities == sorted(equities, reverse=True)
