"""`bgcluster play`: play in a terminal through the gateway, against the CPU or another terminal.

The board is drawn from your side (your home board bottom right), with pip counts, the dice,
the cube, the clock and the lit moves. Commands: roll | move FROM TO | play 8/5 6/5 | undo |
done | double | take | drop | resign | leave | auto on/off | help | quit (bar = 25, off = 0).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc

from bg.events.v1 import events_pb2
from bg.gateway.v1 import gateway_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from client.player import Player
from services.common.play_wire import FINISHED, CommandRefused, PlaySession

HELP = __doc__.split("\n\n", 1)[1] if __doc__ else ""


def render(v: Any, now_ms: int | None = None) -> str:
    """The board from the viewer's side, as text."""
    own, opp = list(v.own), list(v.opponent)

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
        "  " + "".join(f"{p:>3}" for p in range(13, 25)),
        "  " + top[:18] + " |" + top[18:],
        f"  bar: you {own[24]}  them {opp[24]}      off: you {15 - sum(own)}  them {15 - sum(opp)}",
        "  " + bottom[:18] + " |" + bottom[18:],
        "  " + "".join(f"{p:>3}" for p in range(12, 0, -1)),
        f"  pips: you {v.pips[0]}  them {v.pips[1]}   score {list(v.score)} (to {v.match_length})"
        f"   cube {v.cube}{' (yours)' if v.cube_owner == v.seat else ''}",
    ]
    turn = "your" if v.decider == v.seat else "their"
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
        who = "you" if v.winner == v.seat else ("nobody" if v.winner < 0 else "they")
        reason = str(events_pb2.EndReason.Name(v.end_reason)).removeprefix("END_REASON_").lower()
        lines.append(f"  match over: {who} won ({reason.replace('_', ' ')})")
    return "\n".join(lines)


def _pt(p: int) -> str:
    return "bar" if p == 25 else "off" if p == 0 else str(p)


def _point(text: str) -> int:
    low = text.lower()
    return 25 if low == "bar" else 0 if low == "off" else int(low)


def parse(line: str) -> table_pb2.Command | str | None:
    """A table command, a local word (help/quit/auto on/auto off), or None if not understood."""
    words = line.strip().split()
    if not words:
        return None
    word = words[0].lower()
    simple = {"roll": "roll", "r": "roll", "undo": "undo", "u": "undo", "done": "confirm",
              "c": "confirm", "ok": "confirm", "double": "offer_double", "take": "take",
              "drop": "drop", "resign": "resign", "leave": "leave", "boost": "boost",
              "rematch": "offer_rematch", "accept": "accept_rematch"}  # fmt: skip
    if word in simple:
        cmd = table_pb2.Command()
        getattr(cmd, simple[word]).SetInParent()
        return cmd
    try:
        if word in ("move", "m") and len(words) == 3:
            step = events_pb2.Step(to=_point(words[2]))
            setattr(step, "from", _point(words[1]))
            return table_pb2.Command(move=step)
        if word in ("play", "p") and len(words) > 1:
            cmd = table_pb2.Command()
            for part in words[1:]:
                a, b = part.split("/")
                step = cmd.submit_play.steps.add()
                setattr(step, "from", _point(a))
                step.to = _point(b)
            return cmd
    except ValueError:
        return None
    if word in ("help", "quit", "q") or line.strip().lower() in ("auto on", "auto off"):
        return line.strip().lower()
    return None


async def play_terminal(
    gateway: str, name: str, vs_cpu: str, create: str, join: str, bet: int
) -> int:
    async with grpc.aio.insecure_channel(gateway) as channel:
        me = Player(channel, name)
        await me.login()
        if join:
            table = await me.join(join)
        else:
            opts = table_pb2.TableOptions(profile=create or "casual", match_length=1, bet=bet)
            if vs_cpu:
                opts.level = vs_cpu
            table = await me.create_table(opts)
            if table.status == "open":
                print(f"table {table.table_id}: share code {table.code} ({table.invite_link})")
        table_id = table.table_id
        print(f"logged in as {name} ({me.player_id}); commands: {HELP}")
        loop = asyncio.get_running_loop()
        while True:
            status = await me.table(table_id)
            if status.status == "closed":
                print(f"table closed: {status.close_reason}")
                return 1
            if (
                status.status == "open"
                and "" not in status.player_ids
                and status.host_id == me.player_id
            ):
                await me.rpc(me.stub.StartTable, matchmaking_pb2.TableRequest(table_id=table_id))
                continue
            if status.status == "dealt":
                break
            print("waiting for an opponent...")
            await asyncio.sleep(1.0)
        async with PlaySession(me.stub, table_id, me.auth) as session:
            try:
                while True:
                    view = session.view
                    assert view is not None
                    print(render(view))
                    if view.phase in FINISHED:
                        return 0
                    line = await loop.run_in_executor(None, input, "> ")
                    cmd = parse(line)
                    if cmd is None:
                        print("  not understood; type help")
                    elif cmd == "help":
                        print(HELP)
                    elif cmd in ("quit", "q"):
                        return 0
                    elif isinstance(cmd, str):
                        prefs = gateway_pb2.PreferencesRequest(auto_roll=cmd.endswith("on"))
                        await me.rpc(me.stub.SetPreferences, prefs)
                    else:
                        # Leaving holds whatever the table did meanwhile: no seq check.
                        seq = 0 if cmd.WhichOneof("kind") == "leave" else view.seq
                        try:
                            await session.send(cmd, expected_seq=seq)
                        except CommandRefused as refused:
                            print(f"  refused: {refused}")
            except EOFError:
                return 0
