"""Match state as GNU Backgammon's position ID + match ID (export and import).

Seats are gnubg's players 0 and 1. The position ID is from the side of the player on roll
(`turn`); the match ID carries the rest (cube, scores, dice, whose decision, Crawford).
"""

from __future__ import annotations

import dataclasses

from engine.matchid import GameState, MatchKey
from engine.position import Position
from engine.profiles import RulesOptions
from engine.state import MatchState, Phase
from engine.turn import Turn

_GAME_STATE = {
    Phase.MATCH_OVER: GameState.OVER,
    Phase.CLOSED: GameState.OVER,
    Phase.BETWEEN_GAMES: GameState.OVER,
}


def export_ids(m: MatchState) -> tuple[str, str]:
    """(position ID, match ID) of the match now."""
    key = MatchKey(
        cube=m.cube,
        cube_owner=m.cube_owner,
        dice_owner=m.turn,
        crawford=m.crawford_game,
        game_state=_GAME_STATE.get(m.phase, GameState.PLAYING),
        turn=m.decider,
        double_offered=m.phase is Phase.DOUBLE_OFFERED,
        dice=m.dice or (0, 0),
        match_length=m.options.match_length,
        score=m.score,
    )
    return m.position(m.turn).gnubg_id(), key.match_id()


def import_ids(base: MatchState, position_id: str, match_id: str) -> MatchState:
    """`base` (options, fingerprint, clocks) moved to the spot the two IDs describe."""
    pos = Position.from_gnubg_id(position_id)
    key = MatchKey.from_match_id(match_id)
    options: RulesOptions = base.options
    if key.match_length != options.match_length:
        raise ValueError(
            f"match ID is for a match to {key.match_length}; the table plays to "
            f"{options.match_length}"
        )
    if key.game_state is not GameState.PLAYING:
        raise ValueError("only a game in progress can be imported")
    seat = key.dice_owner
    sides = (pos.mover, pos.opponent) if seat == 0 else (pos.opponent, pos.mover)
    dice = key.dice if key.dice != (0, 0) else None
    if key.double_offered:
        phase = Phase.DOUBLE_OFFERED
    elif dice is not None:
        phase = Phase.MOVING
    else:
        phase = Phase.AWAIT_ROLL
    return dataclasses.replace(
        base,
        sides=sides,
        turn=seat,
        phase=phase,
        dice=dice,
        play=Turn(pos, dice) if phase is Phase.MOVING and dice is not None else None,
        cube=key.cube,
        cube_owner=key.cube_owner,
        crawford_game=key.crawford,
        score=key.score,
    )
