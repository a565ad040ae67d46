"""`bgcluster demo`: two scripted guests play a wagered match to 3 (bet 500) through the gateway.

Diamonds are granted with the cluster's operator token; the players pick legal plays with the
engine's normal bot. The result shows the winner, the score, the revealed dice seed and every
die drawn (which `python -m engine verify` can check), balances before and after, and the house
fees (everything that left the two players' balances, since nothing else was spent).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import grpc

from bg.table.v1 import table_pb2
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from client.player import Player
from engine.vocabulary import EndReason
from services.contracts.vocabulary import from_proto

GRANT = 5_000
BET = 500


NAMES = ("demo-ann", "demo-bob")


async def run_demo(
    state: dict[str, Any], timeout_s: float = 600.0, names: tuple[str, str] = NAMES
) -> dict[str, Any]:
    """A wagered demo match on the cluster `state` describes (the cluster.json `bgcluster up`
    wrote: its services' addresses and the operator token), between two guests of `names`."""
    by_name = {s["name"]: s["address"] for s in state["services"]}
    async with (
        grpc.aio.insecure_channel(by_name["gateway"]) as gw_ann,
        grpc.aio.insecure_channel(by_name["gateway"]) as gw_bob,
        grpc.aio.insecure_channel(by_name["wallet"]) as wallet_channel,
    ):
        # One connection each, as two devices would have (rate limits are per connection).
        players = [Player(gw_ann, names[0], seed=1), Player(gw_bob, names[1], seed=2)]
        for p in players:
            await p.login()
        wallet = wallet_pb2_grpc.WalletServiceStub(wallet_channel)
        operator = [("x-operator-token", state["operator_token"])]
        for p in players:
            await wallet.Deposit(
                wallet_pb2.DepositRequest(
                    idempotency_key=f"demo-grant:{p.player_id}",
                    player_id=p.player_id,
                    amount=GRANT,
                    reason="demo grant",
                ),
                metadata=operator,
            )
        before = {p.player_id: await p.balance() for p in players}
        table = await players[0].create_table(
            table_pb2.TableOptions(profile="wagered", match_length=3, bet=BET)
        )
        dealt = await players[1].join(table.code)
        if dealt.status != "dealt":
            raise RuntimeError(f"the table was not dealt: {dealt.status} {dealt.close_reason}")
        await asyncio.wait_for(
            asyncio.gather(*(p.play(table.table_id, timeout_s) for p in players)), timeout_s
        )
        record = await players[0].record(table.table_id, dealt.match_id)
        winner = record.player_ids[record.winner] if record.winner >= 0 else None
        after: dict[str, int] = {}
        for _ in range(300):  # the wallet settles (or refunds) from table-events: wait for it
            after = {p.player_id: await p.balance() for p in players}
            paid = winner is not None and after[winner] > before[winner] - BET
            refunded = winner is None and after == before
            if paid or refunded:
                break
            await asyncio.sleep(0.1)
    dice = [v for roll in record.rolls for v in (roll.a, roll.b)]
    assert hashlib.sha256(bytes.fromhex(record.seed_hex)).hexdigest() == record.fingerprint
    return {
        "table_id": table.table_id,
        "match_id": dealt.match_id,
        "winner": winner,
        "end_reason": str(from_proto(record.end_reason, EndReason) or ""),
        "score": dict(zip(record.player_ids, record.score, strict=True)),
        "seed": record.seed_hex,
        "fingerprint": record.fingerprint,
        "dice": dice,
        "balances_before": before,
        "balances_after": after,
        "house_fees": sum(before.values()) - sum(after.values()),
        "commands": sum(p.commands for p in players),
    }
