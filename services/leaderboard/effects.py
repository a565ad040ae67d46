"""What an event changes on the boards: pure functions of the event, no I/O (the store applies
the deltas they return; services/leaderboard/boards.py has the arithmetic)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bg.events.v1 import events_pb2
from engine.vocabulary import EndReason, GameResult
from services.contracts.seats import is_computer
from services.contracts.vocabulary import from_proto
from services.leaderboard import boards

ALL = "all"  # the all-time key of the trophies and rating boards


@dataclass
class Delta:
    board: str
    key: str
    player_id: str
    value: int


@dataclass
class Effects:
    deltas: list[Delta] = field(default_factory=list)
    rated: tuple[str, str, int] | None = None  # (winner, loser, match length)
    source: str = ""  # the match (or tournament) the event belongs to: its changes are kept by it


def outcome(event: events_pb2.TableEvent) -> tuple[str, dict[str, bool | None]]:
    """A finished match's profile and each player's result: True won, False lost, None for a
    match closed undecided or a test game (a player's record counts it in neither)."""
    kind = event.WhichOneof("body")
    end = getattr(event, kind or "match_ended")
    players = list(end.info.player_ids)
    if kind != "match_ended" or end.info.test_game:  # a test game is recorded nowhere (I-18)
        return end.info.profile, dict.fromkeys(players)
    return end.info.profile, {p: seat == end.winner_seat for seat, p in enumerate(players)}


def table_effects(event: events_pb2.TableEvent, season_ms: int) -> Effects:
    """What a table event changes on the boards."""
    fx = Effects(source=event.match_id)
    kind = event.WhichOneof("body")
    season = boards.season_of(event.at_ms, season_ms)
    if kind == "game_ended":
        g = event.game_ended
        result = from_proto(g.result, GameResult)
        if g.info.profile == "wagered" and g.info.rated and result is not None:
            winner = g.info.player_ids[g.winner_seat]
            value = boards.game_trophies(result)
            fx.deltas += [
                Delta("trophies", ALL, winner, value),
                Delta("trophies", season, winner, value),
            ]
    elif kind == "match_ended":
        m = event.match_ended
        info = m.info
        players = list(info.player_ids)
        winner = players[m.winner_seat]
        if info.profile == "wagered" and info.rated:
            won = [
                r
                for g in m.games
                if g.winner_seat == m.winner_seat and (r := from_proto(g.result, GameResult))
            ]
            reason = from_proto(m.reason, EndReason)
            bonus = reason and boards.match_trophies(info.match_length, reason, won)
            if bonus:
                fx.deltas += [
                    Delta("trophies", ALL, winner, bonus),
                    Delta("trophies", season, winner, bonus),
                ]
        elif info.profile == "scored" and not info.test_game:
            level = info.level or "players"
            for player, points in zip(players, m.scored_points, strict=False):
                if points and not is_computer(player):
                    fx.deltas.append(Delta("scored", level, player, points))
        elif info.profile == "casual" and info.rated and not any(is_computer(p) for p in players):
            fx.rated = (winner, players[1 - m.winner_seat], info.match_length)
    return fx


def wallet_effects(event: events_pb2.WalletEvent, season_ms: int) -> Effects:
    """I-13: a settled wagered match adds the winner's net gain to the season's league."""
    fx = Effects(source=event.match_id or event.tournament_id)
    if event.kind == "settle" and event.winner_id:
        fx.deltas.append(
            Delta(
                "league", boards.season_of(event.at_ms, season_ms), event.winner_id, event.net_gain
            )
        )
    return fx


def wallet_players(event: events_pb2.WalletEvent) -> list[str]:
    """The players a wallet event concerns."""
    return sorted({p for p in (event.winner_id, *event.player_deltas) if p})


def tournament_effects(event: events_pb2.TournamentEvent, season_ms: int) -> Effects:
    """Issue 29: a finished tournament adds a win to its champion's season and all-time counts
    on the tournament board."""
    fx = Effects(source=event.tournament_id)
    champion = next((p.player_id for p in event.placings if p.rank == 1), "")
    if champion:
        season = boards.season_of(event.at_ms, season_ms)
        fx.deltas += [
            Delta("tournaments", ALL, champion, 1),
            Delta("tournaments", season, champion, 1),
        ]
    return fx
