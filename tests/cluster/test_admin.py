"""Issue 16 req. 4, end to end on a running cluster: the operators' tools through the gateway's
AdminService and `bgcluster admin`. A banned player is cut off mid-match (tokens, stream, login,
refresh) and the match ends by the leaving rule with exact money (I-6, I-11); credits and
debits land in the ledger with who and why; a stuck table closes with every stake returned
(I-10); every admin action, refused ones included, is in the audit log."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis.asyncio as redis_asyncio

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.play_wire import PlaySession, phase_of, reason_of
from client.player import Player
from services.contracts.redis_keys import LOBBY_TAG
from tests.helpers import error_of, retried

pytestmark = pytest.mark.e2e
BIN = Path(sys.executable).parent
FUNDS = 5000


@pytest.fixture
async def ops(cluster: dict[str, Any]) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to the operators' plane: the identity service's AdminService."""
    async with grpc.aio.insecure_channel(cluster["identity"]) as channel:
        yield channel


async def _operator(cluster: dict[str, Any], channel: grpc.aio.Channel) -> Any:
    stub = admin_pb2_grpc.AdminServiceStub(channel)
    login = await stub.OperatorLogin(
        admin_pb2.OperatorLoginRequest(name=cluster["admin"]["name"], key=cluster["admin"]["key"])
    )
    return stub, [("authorization", f"Bearer {login.token}")]


async def _fund(cluster: dict[str, Any], *players: Player) -> None:
    async with grpc.aio.insecure_channel(cluster["wallet"]) as wc:
        wallet = wallet_pb2_grpc.WalletServiceStub(wc)
        for p in players:
            await wallet.Deposit(
                wallet_pb2.DepositRequest(
                    idempotency_key=f"fund:{p.player_id}", player_id=p.player_id, amount=FUNDS
                ),
                metadata=[("x-operator-token", cluster["operator"])],
            )


async def _balances(cluster: dict[str, Any], want: dict[str, int]) -> dict[str, int]:
    """The ledger's balances once they equal `want` (bounded: ~30 s), or as they are then."""
    async with grpc.aio.insecure_channel(cluster["wallet"]) as wc:
        wallet = wallet_pb2_grpc.WalletServiceStub(wc)
        got: dict[str, int] = {}
        for _ in range(300):
            got = {
                p: (await wallet.GetBalance(wallet_pb2.GetBalanceRequest(player_id=p))).balance
                for p in want
            }
            if got == want:
                break
            await asyncio.sleep(0.1)
        return got


async def _device_player(channel: grpc.aio.Channel, name: str, device: str) -> Player:
    player = Player(channel, name, seed=7)
    reply = await player.stub.Login(gateway_pb2.LoginRequest(device_id=device, display_name=name))
    player.token, player.player_id = reply.token, reply.player_id
    player.refresh = reply.refresh_token  # type: ignore[attr-defined]
    return player


async def test_a_banned_player_is_cut_off_mid_match_and_the_opponent_is_paid(
    cluster: dict[str, Any],
    ops: grpc.aio.Channel,
) -> None:
    """I-6 / I-11: a ban leaves the banned player's wagered match for them: the opponent wins
    the pot less fees (stakes 1,000 each: +840 and -1,000), to the diamond. Their token, their
    open stream, their refresh token and their device login all stop at once; unbanned, the
    same device is the same player again (the ban list is the identity service's, each gateway
    syncing it within BG_BAN_SYNC_S)."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann = Player(ch, "ann", seed=1)
        await ann.login()
        device = "dev-" + uuid.uuid4().hex + uuid.uuid4().hex
        bob = await _device_player(ch, f"bob{uuid.uuid4().hex[:6]}", device)
        await _fund(cluster, ann, bob)
        bob_before = await bob.balance()  # the funds and the cluster's starter grant
        table = await ann.create_table(
            table_pb2.TableOptions(profile="wagered", match_length=3, bet=1000)
        )
        await bob.join(table.code)
        requests: asyncio.Queue[Any] = asyncio.Queue()
        await requests.put(gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table.table_id)))

        async def outgoing() -> Any:
            while (item := await requests.get()) is not None:
                yield item

        stream = bob.stub.Play(outgoing(), metadata=bob.auth)
        first = await stream.read()
        assert isinstance(first, gateway_pb2.PlayUpdate) and first.update.view.seat == 1

        admin, auth = await _operator(cluster, ops)
        banned = await admin.Ban(
            admin_pb2.BanRequest(player_id=bob.player_id, reason="collusion, ticket 4411"),
            metadata=auth,
        )
        assert banned.banned and list(banned.left_tables) == [table.table_id]

        # The open stream gets BANNED and ends.
        codes = []
        while isinstance(update := await stream.read(), gateway_pb2.PlayUpdate):  # to its EOF
            if update.WhichOneof("kind") == "error":
                codes.append(update.error.error.code)
        assert codes == ["BANNED"]
        await requests.put(None)
        # The token (valid for 15 more minutes) is refused at once, as are the refresh token
        # and the device's login.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await bob.balance()
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert error_of(refused.value).code == "BANNED"
        with pytest.raises(grpc.aio.AioRpcError) as refreshed:
            await bob.stub.Refresh(gateway_pb2.RefreshRequest(refresh_token=bob.refresh))  # type: ignore[attr-defined]
        assert error_of(refreshed.value).code == "REFRESH_REVOKED"
        with pytest.raises(grpc.aio.AioRpcError) as again:
            await _device_player(ch, "bob", device)
        assert error_of(again.value).code == "BANNED"

        view = await ann.view(table.table_id)
        assert (phase_of(view), reason_of(view), view.winner) == ("match_over", "left", 0)
        want = {ann.player_id: FUNDS + 840, bob.player_id: bob_before - 1000}
        assert await _balances(cluster, want) == want

        await admin.Unban(
            admin_pb2.BanRequest(player_id=bob.player_id, reason="appeal upheld"), metadata=auth
        )
        # Every gateway sees the lifted ban at its next sync of the list (BG_BAN_SYNC_S).
        back = await retried(lambda: _device_player(ch, "bob", device), time.monotonic() + 10)
        assert back.player_id == bob.player_id and await back.balance() == bob_before - 1000


async def test_a_restricted_player_finishes_the_match_then_plays_casual_unrated_only(
    cluster: dict[str, Any],
    ops: grpc.aio.Channel,
) -> None:
    """Issue 61, item 4: an operator restricts a player in the middle of a wagered match: the
    match ends normally (the other resigns: +840 to the restricted player, exact), then every
    wagered or rated table is refused them in words that say how to appeal (RESTRICTED), casual
    unrated play stays open, the record shows why, the action is audited; lifted, they stake
    again."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ann = Player(ch, f"ann{uuid.uuid4().hex[:6]}", seed=3)
        eve = Player(ch, f"eve{uuid.uuid4().hex[:6]}", seed=4)
        await ann.login()
        await eve.login()
        await _fund(cluster, ann, eve)
        wagered = table_pb2.TableOptions(profile="wagered", match_length=1, bet=1000)
        table = await ann.create_table(wagered)
        await eve.join(table.code)
        admin, auth = await _operator(cluster, ops)
        held = await admin.Restrict(
            admin_pb2.RestrictRequest(player_id=eve.player_id, reason="fair play review 12"),
            metadata=auth,
        )
        assert held.restricted
        # The match in progress ends normally: ann resigns, eve is paid the pot less fees.
        async with PlaySession(ann.stub, table.table_id, ann.auth) as session:
            await session.send(table_pb2.Command(resign=table_pb2.Empty()))
            await session.wait_for(lambda v: phase_of(v) == "match_over", 30)
        want = {ann.player_id: FUNDS - 1000, eve.player_id: FUNDS + 840}
        assert await _balances(cluster, want) == want
        for options in (wagered, table_pb2.TableOptions(profile="casual", rated=True)):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await eve.create_table(options)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            said = error_of(refused.value)
            assert said.code == "RESTRICTED" and "To appeal" in said.message
        casual = await eve.create_table(table_pb2.TableOptions(profile="casual"))
        assert casual.status == "open"
        record = await admin.LookupPlayer(
            admin_pb2.LookupPlayerRequest(player_id=eve.player_id, reason="review 12"),
            metadata=auth,
        )
        assert record.restricted and record.restriction_reason == "fair play review 12"
        await admin.Unrestrict(
            admin_pb2.RestrictRequest(player_id=eve.player_id, reason="appeal upheld"),
            metadata=auth,
        )
        again = await eve.create_table(wagered)
        assert again.status == "open"
        log = await admin.ListAudit(admin_pb2.ListAuditRequest(limit=50), metadata=auth)
        rows = [(e.action, e.target, e.reason, e.outcome) for e in log.entries]
        assert ("restrict", eve.player_id, "fair play review 12", "ok") in rows
        assert ("unrestrict", eve.player_id, "appeal upheld", "ok") in rows


async def test_a_flagged_player_is_reviewed_from_the_queue_with_the_evidence_of_a_real_match(
    cluster: dict[str, Any],
    ops: grpc.aio.Channel,
) -> None:
    """Issue 61, items 2 and 4: a scored match played out through the cluster is analysed, each
    player's evidence kept (decisions by difficulty, the best found, think times from the
    events' timestamps); the test flags them (this cluster's threshold is 0: every tested player,
    to check the path); an operator lists the queue, restricts one (RESTRICTED at once) and
    clears the other (gone from the queue), each decision audited with its reason; a bad
    decision or an unknown flag is refused and audited. Players never see the think times."""
    from bg.analysis.v1 import analysis_pb2

    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        # ann thinks 60 ms before each play (a roll or a confirm she sends at once): the times
        # the evidence keeps are hers, from the events' timestamps.
        ann = Player(ch, f"ann{uuid.uuid4().hex[:6]}", seed=5)
        ann.think_s = lambda cmd: 0.06 if cmd.HasField("submit_play") else 0.0
        bob = Player(ch, f"bob{uuid.uuid4().hex[:6]}", seed=6)
        await ann.login()
        await bob.login()
        table = await ann.create_table(table_pb2.TableOptions(profile="scored", match_length=1))
        await bob.join(table.code)
        await asyncio.gather(ann.play(table.table_id, 240), bob.play(table.table_id, 240))
        match_id = f"{table.table_id}-1"
        admin, auth = await _operator(cluster, ops)
        flags: dict[str, Any] = {}
        for _ in range(600):  # the analysis comes off the event stream (bounded: ~120 s)
            for p in (ann, bob):
                listed = await admin.ListFlags(
                    analysis_pb2.ListFlagsRequest(player_id=p.player_id), metadata=auth
                )
                if listed.flags:
                    flags[p.player_id] = listed.flags[0]
            if len(flags) == 2:
                break
            await asyncio.sleep(0.2)
        assert set(flags) == {ann.player_id, bob.player_id}
        for flag in flags.values():
            (match,) = flag.matches
            assert match.match_id == match_id and match.profile == "scored"
            assert match.decisions > 0 and match.close + match.clear <= match.decisions
            assert 0 <= match.close_best <= match.close and 0 <= match.clear_best <= match.clear
            assert match.close_think_ms > 0 or match.clear_think_ms > 0  # from the timestamps
            assert flag.state == "open" and flag.threshold == 0
        (hers,) = flags[ann.player_id].matches
        times = [t for t in (hers.close_think_ms, hers.clear_think_ms) if t]
        assert times and min(times) >= 60
        shown = await ann.stub.GetAnalysis(
            analysis_pb2.GetAnalysisRequest(match_id=match_id), metadata=ann.auth
        )
        moves = [d for d in shown.decisions if d.kind == "move"]
        assert moves and all(d.think_ms == 0 for d in moves) and any(d.gap > 0 for d in moves)

        async def decide(flag_id: int, decision: str, reason: str) -> Any:
            return await admin.DecideFlag(
                admin_pb2.DecideFlagRequest(flag_id=flag_id, decision=decision, reason=reason),
                metadata=auth,
            )

        asks = ((flags[ann.player_id].flag_id, "pardon", "INVALID_DECISION"),
                (10**9, "clear", "UNKNOWN_FLAG"))  # fmt: skip
        for flag_id, decision, code in asks:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await decide(flag_id, decision, "bad ask")
            assert error_of(refused.value).code == code
        held = await decide(flags[ann.player_id].flag_id, "restrict", "flat times, review 61")
        assert (held.state, held.reason) == ("restricted", "flat times, review 61")
        with pytest.raises(grpc.aio.AioRpcError) as stake:
            await ann.create_table(table_pb2.TableOptions(profile="scored", match_length=1))
        assert error_of(stake.value).code == "RESTRICTED"
        record = await admin.LookupPlayer(
            admin_pb2.LookupPlayerRequest(player_id=ann.player_id), metadata=auth
        )
        assert [m.match_id for m in record.fair_play.matches] == [match_id]
        assert record.fair_play.statistic == 0 and record.fair_play.open_flag == 0  # decided
        cleared = await decide(flags[bob.player_id].flag_id, "clear", "a known strong player")
        assert cleared.state == "cleared" and cleared.decided_by == cluster["admin"]["name"]
        left = await admin.ListFlags(
            analysis_pb2.ListFlagsRequest(player_id=bob.player_id), metadata=auth
        )
        assert left.flags == []
        with pytest.raises(grpc.aio.AioRpcError) as twice:
            await decide(flags[bob.player_id].flag_id, "ban", "again")
        assert error_of(twice.value).code == "UNKNOWN_FLAG"  # decided: not in the queue
        log = await admin.ListAudit(admin_pb2.ListAuditRequest(limit=100), metadata=auth)
        rows = [(e.action, e.target, e.reason, e.outcome) for e in log.entries]
        assert ("review_decide", str(held.flag_id), "flat times, review 61", "ok") in rows
        assert ("review_decide", str(cleared.flag_id), "a known strong player", "ok") in rows
        assert ("review_decide", "1000000000", "bad ask", "UNKNOWN_FLAG") in rows
        assert any(r[0] == "review" and r[3] == "ok" for r in rows)


async def test_credits_debits_lookups_and_a_stuck_table_are_audited(
    cluster: dict[str, Any],
    ops: grpc.aio.Channel,
) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        carol, dan = Player(ch, "carol", seed=3), Player(ch, "dan", seed=4)
        for p in (carol, dan):
            await p.login()
        await _fund(cluster, carol, dan)
        admin, auth = await _operator(cluster, ops)

        # A credit, its retry (once), a debit beyond the balance (nothing moves), a debit.
        credit = admin_pb2.AdjustRequest(
            player_id=carol.player_id, amount=300, reason="goodwill: outage", idempotency_key="c1"
        )
        first = await admin.Adjust(credit, metadata=auth)
        retry = await admin.Adjust(credit, metadata=auth)
        assert first.operation_id == retry.operation_id and first.kind == "credit"
        too_much = admin_pb2.AdjustRequest(
            player_id=carol.player_id, amount=-99_999, reason="chargeback", idempotency_key="d0"
        )
        with pytest.raises(grpc.aio.AioRpcError) as short:
            await admin.Adjust(too_much, metadata=auth)
        assert error_of(short.value).code == "INSUFFICIENT_FUNDS"
        debit = admin_pb2.AdjustRequest(
            player_id=carol.player_id, amount=-100, reason="chargeback 77", idempotency_key="d1"
        )
        assert (await admin.Adjust(debit, metadata=auth)).kind == "debit"
        with pytest.raises(grpc.aio.AioRpcError) as no_reason:
            await admin.Adjust(
                admin_pb2.AdjustRequest(player_id=carol.player_id, amount=5, idempotency_key="x"),
                metadata=auth,
            )
        assert error_of(no_reason.value).code == "REASON_REQUIRED"
        assert await carol.balance() == FUNDS + 300 - 100

        # A wagered match dealt, then stuck: its escrow shows as open too long, the operator
        # closes the table, every stake comes back (I-10) and the escrow is gone from the list.
        table = await carol.create_table(
            table_pb2.TableOptions(profile="wagered", match_length=5, bet=400)
        )
        await dan.join(table.code)
        await asyncio.sleep(1.1)
        stale = await admin.ListStaleEscrows(
            admin_pb2.ListStaleEscrowsRequest(older_than_s=1), metadata=auth
        )
        mine = [e for e in stale.escrows if set(e.player_ids) == {carol.player_id, dan.player_id}]
        assert len(mine) == 1 and list(mine[0].stakes) == [400, 400]
        record = await admin.LookupPlayer(
            admin_pb2.LookupPlayerRequest(player_id=carol.player_id, reason="support ticket 9"),
            metadata=auth,
        )
        assert record.balance == FUNDS + 200 - 400 and record.kind == "guest"
        assert [t.table_id for t in record.tables] == [table.table_id]
        memos = {(e.kind, e.amount, e.memo) for e in record.ledger}
        assert ("credit", 300, "admin: goodwill: outage") in memos
        assert ("debit", -100, "admin: chargeback 77") in memos
        closed = await admin.CloseTable(
            admin_pb2.CloseTableRequest(table_id=table.table_id, reason="stuck since 10:02"),
            metadata=auth,
        )
        assert closed.seq > 0
        view = await carol.view(table.table_id)
        assert (phase_of(view), reason_of(view)) == ("closed", "operator_closed")
        want = {carol.player_id: FUNDS + 200, dan.player_id: FUNDS}
        assert await _balances(cluster, want) == want
        with pytest.raises(grpc.aio.AioRpcError) as twice:
            await admin.CloseTable(
                admin_pb2.CloseTableRequest(table_id=table.table_id, reason="again"), metadata=auth
            )
        assert error_of(twice.value).code == "MATCH_OVER"
        after = await admin.ListStaleEscrows(
            admin_pb2.ListStaleEscrowsRequest(older_than_s=1), metadata=auth
        )
        assert not [e for e in after.escrows if e.match_id == mine[0].match_id]

        # Replaying carol's events into the leaderboard applies nothing twice. It replays the
        # leaderboard's archive, which its consumers fill as they read: wait for carol's events
        # to be there (bounded), then a replay applies none of them again.
        ask = admin_pb2.ReplayPlayerRequest(player_id=carol.player_id, reason="board check")
        for _ in range(60):  # (each try is audited: the audit list below reads 200)
            first_replay = await admin.ReplayPlayer(ask, metadata=auth)
            if first_replay.events >= 1:
                break
            await asyncio.sleep(0.5)
        assert first_replay.events >= 1
        replay = await admin.ReplayPlayer(ask, metadata=auth)
        assert replay.applied == 0 and replay.events >= first_replay.events

        # A player's token is no operator's; an operator's token is no player's.
        with pytest.raises(grpc.aio.AioRpcError) as not_operator:
            await admin.LookupPlayer(
                admin_pb2.LookupPlayerRequest(player_id=dan.player_id), metadata=carol.auth
            )
        assert error_of(not_operator.value).code == "NOT_OPERATOR"
        gateway = gateway_pb2_grpc.GatewayServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as not_player:
            await gateway.GetBalance(gateway_pb2.BalanceRequest(), metadata=auth)
        assert not_player.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError) as bad_key:
            await admin.OperatorLogin(admin_pb2.OperatorLoginRequest(name="admin", key="x" * 40))
        assert error_of(bad_key.value).code == "BAD_CREDENTIALS"

        # Every action above is in the audit log: who, what, on whom, why, how it ended.
        log = await admin.ListAudit(admin_pb2.ListAuditRequest(limit=200), metadata=auth)
        rows = [(e.operator, e.action, e.target, e.reason, e.outcome) for e in log.entries]
        c, t = carol.player_id, table.table_id
        for row in [
            ("admin", "adjust", c, "goodwill: outage", "ok"),
            ("admin", "adjust", c, "chargeback", "INSUFFICIENT_FUNDS"),
            ("admin", "adjust", c, "chargeback 77", "ok"),
            ("admin", "adjust", c, "", "REASON_REQUIRED"),
            ("admin", "lookup", c, "support ticket 9", "ok"),
            ("admin", "close_table", t, "stuck since 10:02", "ok"),
            ("admin", "close_table", t, "again", "MATCH_OVER"),
            ("admin", "replay", c, "board check", "ok"),
            ("admin", "stale_escrows", "", "", "ok"),
            ("-", "lookup", dan.player_id, "", "NOT_OPERATOR"),
            ("admin", "login", "admin", "", "BAD_CREDENTIALS"),
        ]:
            assert row in rows, row
        assert rows.count(("admin", "adjust", c, "goodwill: outage", "ok")) == 2  # retry too
        assert all(e.at_ms > time.time() * 1000 - 600_000 for e in log.entries)
        adjusted = next(e for e in log.entries if e.reason == "chargeback 77")
        assert json.loads(adjusted.detail)["amount"] == -100


async def test_an_orphaned_prize_pool_is_listed_and_refunded_once_by_an_operator(
    cluster: dict[str, Any], ops: grpc.aio.Channel, valkey_url: str
) -> None:
    """A wagered tournament's document lost (a Valkey data loss): no director settles its pool,
    so operators find it (tournament status "") and give every buy-in back, once, audited; a
    pool whose tournament matchmaking still knows is refused (its cancel refunds it)."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        admin, auth = await _operator(cluster, ops)
        players = [Player(ch, f"orphan{i}", seed=i) for i in range(3)]
        for p in players:
            await p.login()
        await _fund(cluster, *players)
        wagered = table_pb2.TableOptions(profile="wagered", match_length=1, bet=100)
        made = []
        for name in ("Lost cup", "Kept cup"):
            create = matchmaking_pb2.CreateTournamentRequest(
                name=name, kind="sit_and_go", size=4, options=wagered,
                request_id=uuid.uuid4().hex,
            )  # fmt: skip
            made.append(await admin.CreateTournament(create, metadata=auth))
        lost, kept = made
        for p, t in ((players[0], lost), (players[1], lost), (players[2], kept)):
            await p.rpc(
                p.stub.RegisterTournament,
                matchmaking_pb2.TournamentRequest(tournament_id=t.tournament_id),
            )
        client = redis_asyncio.Redis.from_url(valkey_url)
        try:
            assert await client.delete(f"lobby:{LOBBY_TAG}:tn:{lost.tournament_id}") == 1
        finally:
            await client.aclose()
        await asyncio.sleep(1.1)  # both pools a second old
        listed = await admin.ListStalePools(
            admin_pb2.ListStalePoolsRequest(older_than_s=1), metadata=auth
        )
        found = {p.pool.tournament_id: p for p in listed.pools}
        orphan, known = found[lost.tournament_id], found[kept.tournament_id]
        assert (orphan.tournament_status, orphan.pool.status, orphan.pool.diamonds) == (
            "", "open", 200,
        )  # fmt: skip
        assert (known.tournament_status, known.pool.diamonds) == ("registering", 100)

        async def refund(t: Any, reason: str = "lost in the 03:10 failover") -> Any:
            ask = admin_pb2.RefundOrphanPoolRequest(tournament_id=t.tournament_id, reason=reason)
            return await admin.RefundOrphanPool(ask, metadata=auth)

        for t, reason, code in (
            (kept, "orphan?", "TOURNAMENT_KNOWN"),
            (lost, " ", "REASON_REQUIRED"),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await refund(t, reason)
            assert error_of(refused.value).code == code
        want = {players[0].player_id: FUNDS - 100, players[1].player_id: FUNDS - 100}
        assert await _balances(cluster, want) == want  # refused: nothing moved
        done = await refund(lost)
        again = await refund(lost)
        assert done.kind == "refund_pool" and again.replayed
        assert again.operation_id == done.operation_id
        want = {players[0].player_id: FUNDS, players[1].player_id: FUNDS,
                players[2].player_id: FUNDS - 100}  # fmt: skip
        assert await _balances(cluster, want) == want
        after = await admin.ListStalePools(
            admin_pb2.ListStalePoolsRequest(older_than_s=1), metadata=auth
        )
        ours = (lost.tournament_id, kept.tournament_id)
        assert [p.pool.tournament_id for p in after.pools if p.pool.tournament_id in ours] == [
            kept.tournament_id
        ]
        log = await admin.ListAudit(
            admin_pb2.ListAuditRequest(limit=20, target=lost.tournament_id), metadata=auth
        )
        assert [(e.action, e.outcome) for e in log.entries] == [
            ("pool_refund", "ok"), ("pool_refund", "ok"), ("pool_refund", "REASON_REQUIRED"),
        ]  # fmt: skip
        await admin.CancelTournament(  # the kept one's director refunds it
            matchmaking_pb2.CancelTournamentRequest(tournament_id=kept.tournament_id, reason="t"),
            metadata=auth,
        )
        want = {players[2].player_id: FUNDS}
        assert await _balances(cluster, want) == want


def test_bgcluster_admin_looks_up_and_credits_from_the_command_line(
    cluster: dict[str, Any],
) -> None:
    async def guest() -> str:
        async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
            return await Player(ch, "erin").login()

    player = asyncio.run(guest())

    def admin(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BIN / "bgcluster", "admin", "--data-dir", cluster["data"], *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    credited = admin("credit", player, "250", "--reason", "welcome back")
    assert credited.returncode == 0, credited.stderr
    assert json.loads(credited.stdout)["kind"] == "credit"
    looked = admin("lookup", player, "--reason", "cli check")
    assert looked.returncode == 0 and json.loads(looked.stdout)["balance"] == "250"
    refused = admin("debit", player, "1000", "--reason", "too much")
    assert refused.returncode == 1 and "INSUFFICIENT_FUNDS" in refused.stderr
    audit = json.loads(admin("audit", "--target", player).stdout)
    assert [e["action"] for e in audit["entries"]] == ["adjust", "lookup", "adjust"]
    assert audit["entries"][0]["outcome"] == "INSUFFICIENT_FUNDS"
    silenced = admin("chat-silence", player, "60", "--reason", "flooding")
    assert silenced.returncode == 0 and int(json.loads(silenced.stdout)["until_ms"]) > 0
    lifted = admin("chat-silence", player, "0", "--reason", "appeal")
    assert lifted.returncode == 0 and json.loads(lifted.stdout).get("until_ms", "0") == "0"
    assert admin("chat-reports").returncode == 0
    unreasoned = admin("chat-remove", "t1", "m1", "--reason", " ")
    assert unreasoned.returncode == 1 and "REASON_REQUIRED" in unreasoned.stderr
    pools = admin("pools", "--older-than", "1")
    assert pools.returncode == 0 and isinstance(json.loads(pools.stdout), dict), pools.stderr
    nothing = admin("pool-refund", "no-such-cup", "--reason", " ")
    assert nothing.returncode == 1 and "REASON_REQUIRED" in nothing.stderr


async def test_a_chat_report_reaches_the_operators_who_remove_and_silence_audited(
    cluster: dict[str, Any],
    ops: grpc.aio.Channel,
) -> None:
    """Issue 29 req. 2: a player reports a message (with what came before it); an operator
    reads the queue, removes the message (gone from GetChat), silences the sender for a time and
    resolves the report; each step is in the audit log, and a player's token gets none of it."""
    async with grpc.aio.insecure_channel(cluster["gateway"]) as ch:
        ivy, jon = Player(ch, "ivy", seed=5), Player(ch, "jon", seed=6)
        for p in (ivy, jon):
            await p.login()
        table = await ivy.create_table(table_pb2.TableOptions(profile="casual", match_length=1))
        await jon.join(table.code)
        await ivy.stub.StartTable(
            matchmaking_pb2.TableRequest(table_id=table.table_id), metadata=ivy.auth
        )

        async def say(text: str) -> Any:
            request = gateway_pb2.SendChatRequest(
                table_id=table.table_id, channel=gateway_pb2.CHAT_CHANNEL_TABLE, text=text
            )
            return await ivy.stub.SendChat(request, metadata=ivy.auth)

        await say("hello")
        bad = await say("something rude")
        report = gateway_pb2.ReportChatRequest(
            table_id=table.table_id, message_id=bad.message_id, reason="rude"
        )
        reported = await jon.stub.ReportChat(report, metadata=jon.auth)
        admin, auth = await _operator(cluster, ops)
        with pytest.raises(grpc.aio.AioRpcError) as player:
            await admin.ListChatReports(admin_pb2.ListChatReportsRequest(), metadata=jon.auth)
        assert error_of(player.value).code == "NOT_OPERATOR"
        queue = await admin.ListChatReports(admin_pb2.ListChatReportsRequest(), metadata=auth)
        found = next(r for r in queue.reports if r.report_id == reported.report_id)
        assert found.reporter_id == jon.player_id and found.message.text == "something rude"
        assert [m.text for m in found.context] == ["hello"]

        removed = await admin.RemoveChatMessage(
            admin_pb2.RemoveChatMessageRequest(
                table_id=table.table_id, message_id=bad.message_id, reason="insult"
            ),
            metadata=auth,
        )
        assert removed.removed
        history = await jon.stub.GetChat(
            gateway_pb2.GetChatRequest(table_id=table.table_id), metadata=jon.auth
        )
        assert [m.text for m in history.messages] == ["hello"]
        silence = admin_pb2.SilenceChatPlayerRequest(
            player_id=ivy.player_id, seconds=3600, reason="insult"
        )
        assert (await admin.SilenceChatPlayer(silence, metadata=auth)).until_ms > 0
        with pytest.raises(grpc.aio.AioRpcError) as silenced:
            await say("why?")
        assert error_of(silenced.value).code == "CHAT_SILENCED"
        assert silenced.value.code() == grpc.StatusCode.PERMISSION_DENIED
        resolve = admin_pb2.ResolveChatReportRequest(report_id=reported.report_id, reason="done")
        assert (await admin.ResolveChatReport(resolve, metadata=auth)).was_waiting
        with pytest.raises(grpc.aio.AioRpcError) as no_reason:
            await admin.ResolveChatReport(
                admin_pb2.ResolveChatReportRequest(report_id=reported.report_id), metadata=auth
            )
        assert error_of(no_reason.value).code == "REASON_REQUIRED"

        log = await admin.ListAudit(admin_pb2.ListAuditRequest(limit=200), metadata=auth)
        rows = {(e.operator, e.action, e.target, e.reason, e.outcome) for e in log.entries}
        for row in [
            ("admin", "chat_reports", "", "", "ok"),
            ("admin", "chat_remove", bad.message_id, "insult", "ok"),
            ("admin", "chat_silence", ivy.player_id, "insult", "ok"),
            ("admin", "chat_resolve", reported.report_id, "done", "ok"),
            ("admin", "chat_resolve", reported.report_id, "", "REASON_REQUIRED"),
            ("-", "chat_reports", "", "", "NOT_OPERATOR"),
        ]:
            assert row in rows, row
