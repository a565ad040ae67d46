"""An in-memory BoardRepository (services/leaderboard/adapters/sql_boards.py) for unit tests of the
leaderboard, held to the SQL-and-Redis store by tests/leaderboard/test_store.py, which runs the
same tests on both. Like that store it keeps a record and ranks derived from it: `ranks` can be
lost (as Redis can) and `resync` rebuilds them."""

from __future__ import annotations

from bg.events.v1 import events_pb2
from services.contracts.topics import TABLE_EVENTS, TOURNAMENT_EVENTS, WALLET_EVENTS
from services.leaderboard import boards
from services.leaderboard.effects import ALL, Effects, outcome, wallet_players
from services.leaderboard.ports import COURSE_POINTS, Change, Profile, Ranked


class MemoryBoardStore:
    def __init__(self) -> None:
        self.processed: set[str] = set()
        self.scores: dict[tuple[str, str, str], int] = {}  # (board, key, player) -> value
        self.ratings: dict[str, tuple[float, int, int]] = {}  # rating, experience, matches
        self.matches: dict[str, tuple[int, bytes]] = {}  # match -> (ended ms, end event)
        self.players: dict[str, set[str]] = {}  # player -> their archived matches
        self.ranks: dict[tuple[str, str], dict[str, float]] = {}  # derived, like Redis
        self.wallet: dict[str, tuple[int, bytes, list[str]]] = {}  # event id -> at, event, who
        self.tournaments: dict[str, tuple[int, bytes, set[str]]] = {}  # id -> at, event, who
        # (source, player) -> [(at, change)] in the order applied; player -> profile -> results
        self.changed: dict[tuple[str, str], list[tuple[int, Change]]] = {}
        self.results: dict[str, dict[str, list[bool]]] = {}

    async def apply(self, event_id: str, at_ms: int, fx: Effects) -> bool:
        if event_id in self.processed:
            return False
        self.processed.add(event_id)
        for d in fx.deltas:
            at = (d.board, d.key, d.player_id)
            value = self.scores.get(at, 0)
            self.scores[at] = value + d.value
            self.ranks.setdefault((d.board, d.key), {})[d.player_id] = self.scores[at]
            change = Change(d.board, d.key, value, self.scores[at])
            self.changed.setdefault((fx.source, d.player_id), []).append((at_ms, change))
        if fx.rated:
            winner, loser, length = fx.rated
            (wr, we, wm), (lr, le, lm) = (
                self.ratings.get(p, (boards.START_RATING, 0, 0)) for p in (winner, loser)
            )
            fibs = boards.fibs_change(wr, lr, length, we, le)
            self.ratings[winner] = (wr + fibs.winner, we + length, wm + 1)
            self.ratings[loser] = (lr + fibs.loser, le + length, lm + 1)
            for player, was in ((winner, wr), (loser, lr)):
                now = self.ratings[player][0]
                self.ranks.setdefault(("rating", ALL), {})[player] = now
                moved = Change("rating", ALL, was, now)
                self.changed.setdefault((fx.source, player), []).append((at_ms, moved))
        return True

    async def archive(self, event: events_pb2.TableEvent) -> bool:
        if event.match_id in self.matches:
            return False
        self.matches[event.match_id] = (event.at_ms, event.SerializeToString())
        profile, results = outcome(event)
        for player, won in results.items():
            self.players.setdefault(player, set()).add(event.match_id)
            if won is not None:
                self.results.setdefault(player, {}).setdefault(profile, []).append(won)
        return True

    async def history(self, player: str, limit: int, before_ms: int) -> list[bytes]:
        kept = [self.matches[m] for m in self.players.get(player, set())]
        kept = [m for m in kept if not before_ms or m[0] < before_ms]
        return [raw for _, raw in sorted(kept, key=lambda m: -m[0])[:limit]]

    async def archived(self, match_id: str) -> bytes | None:
        kept = self.matches.get(match_id)
        return None if kept is None else kept[1]

    async def archive_wallet(self, event: events_pb2.WalletEvent) -> bool:
        if event.event_id in self.wallet:
            return False
        self.wallet[event.event_id] = (
            event.at_ms, event.SerializeToString(), wallet_players(event)
        )  # fmt: skip
        return True

    async def archive_tournament(self, event: events_pb2.TournamentEvent) -> bool:
        if event.tournament_id in self.tournaments:
            return False
        who = {p.player_id for p in event.placings}
        self.tournaments[event.tournament_id] = (event.at_ms, event.SerializeToString(), who)
        return True

    async def archived_events(self, player: str | None = None) -> list[tuple[str, bytes]]:
        found = [
            (at, TABLE_EVENTS, raw)
            for match, (at, raw) in self.matches.items()
            if player is None or match in self.players.get(player, set())
        ]
        found += [
            (at, WALLET_EVENTS, raw)
            for at, raw, who in self.wallet.values()
            if player is None or player in who
        ]
        found += [
            (at, TOURNAMENT_EVENTS, raw)
            for at, raw, who in self.tournaments.values()
            if player is None or player in who
        ]
        return [(topic, raw) for _, topic, raw in sorted(found, key=lambda f: f[0])]

    def _ordered(self, board: str, key: str) -> list[tuple[str, float]]:
        # Redis's order: highest score first, ties by member, highest first.
        members = self.ranks.get((board, key), {})
        return sorted(members.items(), key=lambda m: (m[1], m[0]), reverse=True)

    async def top(self, board: str, key: str, limit: int, offset: int = 0) -> list[Ranked]:
        page = self._ordered(board, key)[offset : offset + limit]
        return [(offset + i + 1, p, float(s)) for i, (p, s) in enumerate(page)]

    async def changes(self, source: str, player: str) -> list[Change]:
        found = self.changed.get((source, player), [])
        return [c for _, c in sorted(found, key=lambda f: (f[0], f[1].before))]

    async def rank(
        self, board: str, key: str, player: str, around: int
    ) -> tuple[int, float, list[Ranked]]:
        ordered = self._ordered(board, key)
        index = next((i for i, (p, _) in enumerate(ordered) if p == player), None)
        if index is None:
            return 0, 0.0, []
        start = max(0, index - around)
        near = ordered[start : index + around + 1]
        return (
            index + 1,
            float(ordered[index][1]),
            [(start + i + 1, p, float(s)) for i, (p, s) in enumerate(near)],
        )

    async def size(self, board: str, key: str) -> int:
        return len(self.ranks.get((board, key), {}))

    async def profile(self, player: str) -> Profile:
        out = Profile()
        for (board, key, p), value in self.scores.items():
            if p == player:
                getattr(out, board)[key] = value
        if player in self.ratings:
            out.rating, out.experience, out.rated_matches = self.ratings[player]
        course = [
            (source, at, c.after)
            for (source, p), found in self.changed.items()
            if p == player
            for at, c in found
            if c.board == "rating"
        ]
        out.rating_course = sorted(course, key=lambda r: r[1])[-COURSE_POINTS:]
        for profile, results in self.results.get(player, {}).items():
            out.record[profile] = (sum(results), len(results) - sum(results))
        return out

    async def resync(self) -> None:
        self.ranks = {}
        for (board, key, player), value in self.scores.items():
            self.ranks.setdefault((board, key), {})[player] = value
        for player, (rating, _, _) in self.ratings.items():
            self.ranks.setdefault(("rating", ALL), {})[player] = rating

    async def reset(self) -> None:
        self.processed.clear()
        self.scores.clear()
        self.ratings.clear()
        self.changed.clear()
        await self.resync()
