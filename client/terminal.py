"""`bgcluster play`: play in a terminal through the gateway, against the CPU or another terminal.

The board is drawn from your side (your home board bottom right), with pip counts, the dice,
the cube, the clock and the lit moves, and drawn again whenever the table changes (the
opponent's roll and play, a clock running out), without waiting for you to type.

Commands (bar = 25 or "bar", off = 0 or "off"):
  roll (r)              roll the dice
  move FROM TO (m)      move one checker, e.g. "move 8 5" or "move bar 22"
  play 8/5 6/5 (p)      play a whole roll at once, in gnubg's notation too:
                        "p 24/20* 13/8", "p 8/5(2)", "p 24/18/13", "p bar/22 6/off"
  undo (u)              take back the last step of this turn
  done (c, ok)          end the turn (wagered: required; scored: "got it")
  double                offer the cube       take / drop   answer a double
  boost                 +10 s on your clock for 10 diamonds (wagered)
  resign                give the game as a single (wagered and casual)
  auto on / auto off    roll by yourself when your turn starts (wagered)
  rematch / accept      offer a rematch / accept the one offered (after the match)
  leave                 leave the table (forfeits a match in play)
  hint                  the best plays of your roll (vs CPU and scored test games)
  history               your finished matches, with your error rate in each
  standing              your rating and its course, record, trophies and league, and what
                        this table's finished match changed
  board NAME [PAGE]     a leaderboard, 10 a page: trophies, trophies-all, league, scored,
                        scored-easy/-normal/-expert, rating, tournaments, tournaments-all
  analysis [MATCH]      a finished match's analysis (this table's by default): each
                        player's error rate and luck, every move marked doubtful or worse
  help                  this list          quit (q)   stop this client
"""

from __future__ import annotations

import asyncio
import itertools
import re
import sys
import time
from typing import Any

import grpc

from bg.analysis.v1 import analysis_pb2
from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.analysis_text import analysis_lines
from client.play_wire import CommandRefused, PlaySession
from client.player import Player
from client.standing_text import BOARDS, board_lines, change_line, profile_lines
from client.tournament import done_with, next_match
from client.words import closed_sentence, code_of, refusal, sentence
from services.contracts.vocabulary import FINISHED

HELP = "Commands" + __doc__.split("Commands", 1)[1] if __doc__ else ""


def score_text(v: Any) -> str:
    """The match score from the viewer's side: "2-0 (match to 3)"."""
    me = v.seat
    return f"{v.score[me]}-{v.score[1 - me]} (match to {v.match_length})"


def render(v: Any, now_ms: int | None = None, names: dict[str, str] | None = None) -> str:
    """The board from the viewer's side, as text."""
    own, opp = list(v.own), list(v.opponent)
    them = opponent_name(v, names or {})
    me = seat_name(v, v.seat, names or {})

    def cell(point: int) -> str:  # the viewer's point numbering
        mine = own[point - 1]
        theirs = opp[24 - point]
        if mine:
            return f"{mine:>2}X"
        if theirs:
            return f"{theirs:>2}O"
        return "  ."

    top = "".join(cell(p) for p in range(13, 25))
    bottom = "".join(cell(p) for p in range(12, 0, -1))
    lines = [
        f"  O: {them}",
        "  " + "".join(f"{p:>3}" for p in range(13, 25)),
        "  " + top[:18] + " |" + top[18:],
        f"  bar: you {own[24]}  them {opp[24]}      off: you {15 - sum(own)}  them {15 - sum(opp)}",
        "  " + bottom[:18] + " |" + bottom[18:],
        "  " + "".join(f"{p:>3}" for p in range(12, 0, -1)),
        f"  X: {me}   pips: {me} {v.pips[0]}  {them if v.spectator else 'them'} {v.pips[1]}"
        f"   score {score_text(v)}"
        f"   cube {v.cube}{' (yours)' if v.cube_owner == v.seat else ''}",
    ]
    turn = "your" if v.decider == v.seat else "their"
    if v.spectator:
        turn = f"{seat_name(v, v.decider, names or {})}'s"
    phase = str(events_pb2.Phase.Name(v.phase)).removeprefix("PHASE_").lower().replace("_", " ")
    status = f"  game {v.game_no}, {phase}, {turn} turn"
    if len(v.dice):
        status += f", dice {v.dice[0]}-{v.dice[1]}"
    if v.deadline_ms:
        left = (v.deadline_ms - (now_ms if now_ms is not None else int(time.time() * 1000))) / 1000
        kind = str(events_pb2.DeadlineKind.Name(v.deadline_kind)).removeprefix("DEADLINE_KIND_")
        status += f", {kind.lower().replace('_', ' ')} in {max(0.0, left):.0f} s"
    lines.append(status)
    if v.lit:
        moves = "  ".join(
            f"{_pt(getattr(lit, 'from'))}->{'/'.join(_pt(t) for t in lit.to)}" for lit in v.lit
        )
        lines.append(f"  lit: {moves}")
    if v.phase in FINISHED:
        who = "nobody" if v.winner < 0 else seat_name(v, v.winner, names or {})
        reason = str(events_pb2.EndReason.Name(v.end_reason)).removeprefix("END_REASON_").lower()
        lines.append(f"  match over: {who} won ({reason.replace('_', ' ')}), {score_text(v)}")
        if v.rematch_agreed:
            lines.append("  rematch agreed: the next match is being dealt")
        elif v.rematch_offered_by == 1 - v.seat:
            lines.append(f"  {them} offers a rematch: type accept")
        elif v.rematch_offered_by == v.seat:
            lines.append("  you offered a rematch")
        else:
            lines.append("  type rematch to offer another match, or quit")
    return "\n".join(lines)


def opponent_name(v: Any, names: dict[str, str]) -> str:
    other = v.player_ids[1 - v.seat] if len(v.player_ids) == 2 else ""
    return names.get(other) or (other[:8] if other else "the opponent")


def seat_name(v: Any, seat: int, names: dict[str, str]) -> str:
    """ "you" for the viewer's own seat (a spectator has none), else the player's name."""
    if seat == v.seat and not v.spectator:
        return "you"
    player = v.player_ids[seat] if len(v.player_ids) == 2 else ""
    return names.get(player) or (player[:8] if player else f"seat {seat}")


def describe(event: Any, v: Any, names: dict[str, str]) -> str | None:
    """One line for what happened, as the viewer should see it; None for chatter."""
    kind = event.WhichOneof("body")
    if kind is None:
        return None
    body: Any = getattr(event, kind)
    seat = getattr(body, "seat", v.seat)
    who = seat_name(v, seat, names)
    if kind == "dice_rolled":
        return f"{who} rolled {body.dice[0]}-{body.dice[1]}{' (auto)' if body.auto else ''}"
    if kind == "checkers_moved":
        steps = " ".join(f"{_pt(getattr(s, 'from'))}/{_pt(s.to)}" for s in body.steps)
        return f"{who} moved {steps}{'*' * len(body.hits)}"
    if kind == "opening_roll":
        return f"opening roll {body.dice[0]}-{body.dice[1]}"
    if kind == "turn_passed":
        return f"{who} cannot move"
    if kind == "timed_out":
        return f"{who} ran out of time"
    if kind == "double_offered":
        return f"{who} doubled to {body.cube}"
    if kind in ("double_taken", "double_dropped"):
        return f"{who} {'took' if kind == 'double_taken' else 'dropped'}"
    if kind in ("player_away", "player_back"):
        if seat == v.seat and not v.spectator:
            return None  # this client is here: it reports itself back at once (I-41)
        return f"{who} {'is not at the table' if kind == 'player_away' else 'is at the table'}"
    if kind == "game_ended":
        winner = seat_name(v, body.winner_seat, names)
        return f"game {body.game_no} to {winner} ({body.points} point{'s' * (body.points != 1)})"
    if kind == "rematch_offered":
        return f"{who} offered a rematch"
    if kind == "rematch_agreed":
        return "rematch agreed"
    return None


def _pt(p: int) -> str:
    return "bar" if p == 25 else "off" if p == 0 else str(p)


def _point(text: str) -> int:
    low = text.lower()
    return 25 if low == "bar" else 0 if low == "off" else int(low)


# One part of a written play: points joined by "/", each may carry "*" (a hit: the table knows),
# the whole may end in "(n)": played n times.
_PART = re.compile(r"(?P<path>[^()]+?)(?:\((?P<times>[1-4])\))?")


def _hops(part: str) -> list[tuple[int, int]]:
    found = _PART.fullmatch(part)
    if found is None:
        raise ValueError(part)
    points = [_point(p.rstrip("*")) for p in found["path"].split("/")]
    if len(points) < 2:
        raise ValueError(part)
    return list(itertools.pairwise(points)) * int(found["times"] or 1)


def parse(line: str) -> table_pb2.Command | str | None:
    """A table command, a local word (help/quit/auto on/auto off), or None if not understood."""
    words = line.strip().split()
    if not words:
        return None
    word = words[0].lower()
    simple = {
        "roll": "roll",
        "r": "roll",
        "undo": "undo",
        "u": "undo",
        "done": "confirm",
        "c": "confirm",
        "ok": "confirm",
        "double": "offer_double",
        "take": "take",
        "drop": "drop",
        "resign": "resign",
        "leave": "leave",
        "boost": "boost",
        "rematch": "offer_rematch",
        "accept": "accept_rematch",
    }
    if word in simple:
        cmd = table_pb2.Command()
        getattr(cmd, simple[word]).SetInParent()
        return cmd
    try:
        if word in ("move", "m") and len(words) == 3:
            step = events_pb2.Step(to=_point(words[2].rstrip("*")))
            setattr(step, "from", _point(words[1]))
            return table_pb2.Command(move=step)
        if word in ("play", "p") and len(words) > 1:
            cmd = table_pb2.Command()
            for part in words[1:]:
                for frm, to in _hops(part):
                    step = cmd.submit_play.steps.add()
                    setattr(step, "from", frm)
                    step.to = to
            return cmd
    except ValueError:
        return None
    if word == "board" and 2 <= len(words) <= 3 and words[1].lower() in BOARDS:
        page = words[2] if len(words) == 3 else "1"
        return f"board {words[1].lower()} {page}" if page.isdigit() and int(page) >= 1 else None
    if word in ("help", "quit", "q", "hint", "history", "standing") or line.strip().lower() in (
        "auto on",
        "auto off",
    ):
        return line.strip().lower()
    if word == "analysis" and len(words) <= 2:
        return " ".join(["analysis", *words[1:]])
    return None


EOF_LINGER_S = 5.0  # after the end of input, how long to wait for the table to answer
PROMPT = "> "


def prompt() -> None:
    print(PROMPT, end="", flush=True)


def clear_prompt() -> None:
    """Before pushed output: the prompt line is cleared on a terminal (the board redraws and
    asks again below), ended on anything else, so nothing is written after the "> "."""
    if sys.stdout.isatty():
        print("\r\x1b[K", end="", flush=True)
    else:
        print(flush=True)


class Lines:
    """Lines typed on stdin, read without blocking the event loop (a pipe or a terminal through
    the loop; anything else, such as a file, through a thread)."""

    def __init__(self) -> None:
        self.reader: asyncio.StreamReader | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        except (ValueError, OSError):
            return  # not a pipe or a terminal
        self.reader = reader

    async def readline(self) -> str | None:
        """The next line, or None at the end of input."""
        if self.reader is None:
            raw = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        else:
            raw = (await self.reader.readline()).decode(errors="replace")
        return raw if raw else None


async def _lobby(me: Player, vs_cpu: str, create: str, join: str, bet: int) -> str | None:
    """Create or join a table and wait for its deal; the table id, or None if it closed."""
    if join:
        table = await me.join(join)
    else:
        opts = table_pb2.TableOptions(profile=create or "casual", match_length=1, bet=bet)
        if vs_cpu:
            opts.level = vs_cpu
        table = await me.create_table(opts)
        if table.status == "open" and not vs_cpu:
            print(f"table {table.table_id}: share code {table.code} ({table.invite_link})")
    table_id = str(table.table_id)
    while True:
        status = await me.table(table_id)
        if status.status == "closed":
            print(closed_sentence(status.close_reason))
            return None
        if (
            status.status == "open"
            and "" not in status.player_ids
            and status.host_id == me.player_id
        ):
            await me.rpc(me.stub.StartTable, matchmaking_pb2.TableRequest(table_id=table_id))
            continue
        if status.status == "dealt":
            return table_id
        print("waiting for an opponent...", flush=True)
        await asyncio.sleep(1.0)


async def play_terminal(
    gateway: str, name: str, vs_cpu: str, create: str, join: str, bet: int
) -> int:
    async with grpc.aio.insecure_channel(gateway) as channel:
        me = Player(channel, name)
        await me.login()
        table_id = await _lobby(me, vs_cpu, create, join, bet)
        if table_id is None:
            return 1
        print(f"logged in as {name}; type help for the commands")
        lines = Lines()
        await lines.start()
        updates: asyncio.Queue[gateway_pb2.SeatUpdate] = asyncio.Queue()
        session = PlaySession(me.stub, table_id, me.auth, on_update=updates.put_nowait)
        async with session:
            return await _play(me, session, lines, updates)


async def _play(
    me: Player,
    session: PlaySession,
    lines: Lines,
    updates: asyncio.Queue[gateway_pb2.SeatUpdate],
    until_over: bool = False,
) -> int:
    """Draw the table whenever it changes and act on what is typed, whichever comes first."""
    names: dict[str, str] = {}
    first = True
    typed: asyncio.Future[str | None] = asyncio.ensure_future(lines.readline())
    pushed: asyncio.Future[gateway_pb2.SeatUpdate] = asyncio.ensure_future(updates.get())
    ended = False  # stdin ended (a script piped in): show what follows for a while, then stop
    try:
        while True:
            waits: set[asyncio.Future[Any]] = {typed, pushed}
            done, _ = await asyncio.wait(
                waits, timeout=EOF_LINGER_S if ended else None, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                return 0
            if pushed in done:
                if not first:
                    clear_prompt()
                batch = [pushed.result()]
                while not updates.empty():
                    batch.append(updates.get_nowait())
                pushed = asyncio.ensure_future(updates.get())
                view = batch[-1].view
                missing = [p for p in view.player_ids if p and p not in names]
                if missing:
                    reply = await me.rpc(
                        me.stub.GetNames, gateway_pb2.NamesRequest(player_ids=missing)
                    )
                    names.update(reply.names)
                events = [e for u in batch for e in u.events]
                said = [t for e in events if (t := describe(e, view, names))]
                for text in said[-10:] if first else said:  # joining: the last few only
                    print(f"  * {text}")
                first = False
                print(render(session.view or view, names=names))
                prompt()
            if session.closed is not None and updates.empty():
                print("the table's stream ended")
                return 0
            over = session.view is not None and session.view.phase in FINISHED
            if over and (ended or until_over):
                return 0
            if typed in done:
                line = typed.result()
                if line is None:
                    ended = True
                    typed = asyncio.get_running_loop().create_future()  # never: no more input
                    continue
                typed = asyncio.ensure_future(lines.readline())
                if await _command(me, session, line) == "quit":
                    print(goodbye(session.view))
                    return 0
    finally:
        for task in (typed, pushed):
            task.cancel()


def goodbye(view: table_pb2.TableView | None) -> str:
    """What quitting leaves behind: a match in play goes on without you."""
    if view is None or view.phase in FINISHED:
        return "bye"
    return (
        "you quit this client; the match goes on without you: you are away from the table, "
        "your clock keeps running, and if you stay away too long you lose the match (a wagered "
        "match gives you 60 s to come back). Type leave instead to give the table up."
    )


async def _command(me: Player, session: PlaySession, line: str) -> str | None:
    view = session.view
    assert view is not None
    cmd = parse(line)
    if cmd is None:
        if line.strip():
            print("  not understood; type help")
        prompt()
    elif cmd == "help":
        print(HELP)
        prompt()
    elif cmd in ("quit", "q"):
        return "quit"
    elif cmd == "hint":
        await _hint(me, view.table_id)
        prompt()
    elif cmd == "history":
        await _history(me)
        prompt()
    elif cmd == "standing":
        await _standing(me, view)
        prompt()
    elif isinstance(cmd, str) and cmd.startswith("board "):
        _, word, page = cmd.split()
        await _board(me, word, int(page))
        prompt()
    elif isinstance(cmd, str) and cmd.startswith("analysis"):
        await _analysis(me, cmd.split()[1] if " " in cmd else view.match_id)
        prompt()
    elif isinstance(cmd, str):
        prefs = gateway_pb2.PreferencesRequest(auto_roll=cmd.endswith("on"))
        await me.rpc(me.stub.SetPreferences, prefs)
        print(f"  {cmd}", flush=True)
    else:
        # Leaving holds whatever the table did meanwhile: no seq check.
        seq = 0 if cmd.WhichOneof("kind") == "leave" else view.seq
        try:
            await session.send(cmd, expected_seq=seq)
        except CommandRefused as refused:
            print(f"  {sentence(refused.code)}")
            prompt()
    return None


async def _hint(me: Player, table_id: str) -> None:
    request = gateway_pb2.HintRequest(table_id=table_id, limit=3)
    try:
        hint = await me.rpc(me.stub.GetHint, request)
    except grpc.aio.AioRpcError as err:
        print(f"  {refusal(err)}")
        return
    for n, play in enumerate(hint.plays, 1):
        win = sum(play.probabilities[:3])
        print(f"  {n}. {play.notation:<22} {play.equity:+.3f}  {win:.0%} to win")


async def _names(me: Player, ids: list[str]) -> dict[str, str]:
    reply = await me.rpc(me.stub.GetNames, gateway_pb2.NamesRequest(player_ids=ids[:16]))
    return dict(reply.names)


async def _history(me: Player) -> None:
    reply = await me.rpc(me.stub.GetMatchHistory, leaderboard_pb2.HistoryRequest(limit=10))
    if not reply.matches:
        print("  no finished match yet")
        return
    names = await _names(me, sorted({p for m in reply.matches for p in m.player_ids}))
    for m in reply.matches:
        seat = list(m.player_ids).index(me.player_id) if me.player_id in m.player_ids else 0
        rival = names.get(m.player_ids[1 - seat], "?") if len(m.player_ids) == 2 else "?"
        result = "undecided" if m.winner_seat < 0 else "won" if m.winner_seat == seat else "lost"
        score = [*m.score, 0, 0]
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(m.ended_ms / 1000))
        mine = await _own_error_rate(me, m.match_id, seat)
        print(
            f"  {when} {m.profile} vs {rival}, {result} {score[seat]}-{score[1 - seat]}"
            f"{mine} · analysis {m.match_id}"
        )


async def _standing(me: Player, view: table_pb2.TableView) -> None:
    try:
        mine = await me.rpc(me.stub.GetProfile, leaderboard_pb2.ProfileRequest())
        changed = None
        if view.phase in FINISHED and view.match_id and not view.spectator:
            asked = leaderboard_pb2.ChangesRequest(match_id=view.match_id)
            changed = await me.rpc(me.stub.GetMatchChanges, asked)
    except grpc.aio.AioRpcError as err:
        print(f"  {refusal(err)}")
        return
    for line in profile_lines(mine):
        print(f"  {line}")
    if changed is not None:
        lines = [change_line(c) for c in changed.changes] or ["nothing on the boards (yet)"]
        print("  this match changed: " + "; ".join(lines))


async def _board(me: Player, word: str, page: int) -> None:
    board, key, _ = BOARDS[word]
    try:
        top = await me.rpc(
            me.stub.GetLeaderboard,
            leaderboard_pb2.TopRequest(board=board, key=key, limit=10, offset=(page - 1) * 10),
        )
        mine = await me.rpc(me.stub.GetRank, leaderboard_pb2.RankRequest(board=board, key=key))
    except grpc.aio.AioRpcError as err:
        print(f"  {refusal(err)}")
        return
    names = await _names(me, [e.player_id for e in top.entries]) if top.entries else {}
    for line in board_lines(word, top, mine, names, me.player_id, page):
        print(f"  {line}")


async def _own_error_rate(me: Player, match_id: str, seat: int) -> str:
    try:
        found = await me.rpc(
            me.stub.GetAnalysis, analysis_pb2.GetAnalysisRequest(match_id=match_id)
        )
    except grpc.aio.AioRpcError:
        return ""
    if found.state != analysis_pb2.ANALYSIS_STATE_DONE or seat >= len(found.players):
        return ", being analysed" if found.state == analysis_pb2.ANALYSIS_STATE_QUEUED else ""
    p = found.players[seat]
    return f", your error rate {p.error_rate:.1f} ({p.band})"


async def _analysis(me: Player, match_id: str) -> None:
    if not match_id:
        print("  no match here yet: analysis MATCH (see history)")
        return
    try:
        found = await me.rpc(
            me.stub.GetAnalysis, analysis_pb2.GetAnalysisRequest(match_id=match_id)
        )
    except grpc.aio.AioRpcError as err:
        if code_of(err) == "UNKNOWN_MATCH":  # in play, or not one of yours
            print("  no analysis of that match: it comes once a match you played has ended")
        else:
            print(f"  {refusal(err)}")
        return
    for line in analysis_lines(found, await _names(me, list(found.player_ids))):
        print(f"  {line}")


async def tournament_terminal(gateway: str, name: str, tournament: str) -> int:
    """`bgcluster play --tournament ID`: register, then play each match the bracket seats you
    at, in this terminal, until you are out or the tournament is over; `--tournament list`
    lists the tournaments."""
    async with grpc.aio.insecure_channel(gateway) as channel:
        me = Player(channel, name)
        await me.login()
        if tournament == "list":
            listed = await me.rpc(me.stub.ListTournaments, matchmaking_pb2.ListTournamentsRequest())
            for t in listed.tournaments:
                fee = f"  buy-in {t.buy_in}" if t.buy_in else ""
                print(
                    f"{t.tournament_id}  {t.status:11} {t.kind:10} {t.options.profile:7} "
                    f"{len(t.player_ids)}/{t.size}  {t.name}{fee}"
                )
            if not listed.tournaments:
                print("no tournament")
            return 0
        request = matchmaking_pb2.TournamentRequest(tournament_id=tournament)
        try:
            found = await me.rpc(me.stub.RegisterTournament, request)
        except grpc.aio.AioRpcError as exc:
            print(f"cannot register: {refusal(exc)}")
            return 1
        paid = f"; your buy-in of {found.buy_in} is held" if found.buy_in else ""
        print(f"registered for {found.name} ({len(found.player_ids)}/{found.size} players){paid}")
        lines = Lines()
        await lines.start()
        played: set[str] = set()
        while True:
            found = await me.rpc(me.stub.GetTournament, request)
            rank = next((r.rank for r in found.ranks if r.player_id == me.player_id), 0)
            if done_with(found, me.player_id):
                ranked = f"; your rank: {rank}" if rank else ""
                prize = next((x.amount for x in found.prizes if x.player_id == me.player_id), 0)
                won = f"; you won {prize} diamonds" if prize else ""
                print(f"the tournament is {found.status}{ranked}{won}")
                return 0
            match = next_match(found, me.player_id, played)
            if match is None:
                await asyncio.sleep(1.0)
                continue
            print(f"round {match.round} of {found.rounds}: your match is dealt", flush=True)
            updates: asyncio.Queue[gateway_pb2.SeatUpdate] = asyncio.Queue()
            session = PlaySession(me.stub, match.table_id, me.auth, on_update=updates.put_nowait)
            async with session:
                await _play(me, session, lines, updates, until_over=True)
            played.add(match.table_id)


async def watch_terminal(gateway: str, name: str, table_id: str) -> int:
    """`bgcluster play --watch TABLE`: a read-only board, drawn again on every update (I-35);
    `--watch list` lists the matches in play that anyone may watch."""
    async with grpc.aio.insecure_channel(gateway) as channel:
        me = Player(channel, name)
        await me.login()
        if table_id == "list":
            live = matchmaking_pb2.ListTablesRequest(live=True, limit=20)
            tables = (await me.rpc(me.stub.ListTables, live)).tables
            for t in tables:
                print(f"{t.table_id}  {t.options.profile:8} match to {t.options.match_length}")
            if not tables:
                print("no match anyone may watch is in play")
            return 0
        names: dict[str, str] = {}
        call = me.stub.Watch(gateway_pb2.WatchRequest(table_id=table_id), metadata=me.auth)
        try:
            async for message in call:
                update = message.update
                view = update.view
                missing = [p for p in view.player_ids if p and p not in names]
                if missing:
                    request = gateway_pb2.NamesRequest(player_ids=missing)
                    names.update((await me.rpc(me.stub.GetNames, request)).names)
                for event in update.events:
                    if text := describe(event, view, names):
                        print(f"  * {text}")
                print(render(view, names=names), flush=True)
                if view.phase in FINISHED:
                    return 0  # the match is over (a rematch would be another one to watch)
        except grpc.aio.AioRpcError as exc:
            print(f"cannot watch: {refusal(exc)}")
            return 1
        return 0
