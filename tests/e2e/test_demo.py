"""End to end through the gateway with two table replicas: the demo's wagered match to 3 with a
bet of 500 — lobby, deal (escrow), play over the Play stream, settlement from table-events."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from client.demo import BET, GRANT, run_demo
from engine import dice
from infra.cluster.runner import Cluster, ClusterConfig
from infra.cluster.status import read_state
from tests.helpers import kafka_namespace

pytestmark = pytest.mark.e2e


async def test_demo_wagered_match_to_three(
    tmp_path: Path, valkey_url: str, kafka_bootstrap: str
) -> None:
    cluster = Cluster(
        ClusterConfig(
            data_dir=tmp_path,
            base_port=0,
            redis_url=valkey_url,
            kafka_bootstrap=kafka_bootstrap,
            kafka_namespace=kafka_namespace(),
        ),
        io.StringIO(),
    )
    await cluster.start()
    try:
        result = await run_demo(read_state(tmp_path), timeout_s=300)
    finally:
        await cluster.stop()
    players = list(result["balances_before"])
    assert result["balances_before"] == {p: GRANT for p in players}
    winner = result["winner"]
    loser = next(p for p in players if p != winner)
    assert result["end_reason"] == "points" and result["score"][winner] >= 3  # a gammon may pass 3
    fees = 2 * BET * 8 // 100  # I-11: 8% of each side's stake
    assert result["house_fees"] == fees
    assert result["balances_after"] == {winner: GRANT - BET + 2 * BET - fees, loser: GRANT - BET}
    # I-27: the revealed seed matches the fingerprint and produced every die of the match.
    rolls = list(zip(result["dice"][::2], result["dice"][1::2], strict=True))
    ok, reason = dice.verify(bytes.fromhex(result["seed"]), result["fingerprint"], rolls)
    assert ok, reason
