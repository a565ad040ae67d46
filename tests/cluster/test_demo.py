"""End to end through the gateway with two table replicas: the demo's wagered match to 3 with a
bet of 500 — lobby, deal (escrow), play over the Play stream, settlement from table-events —
then more matches, two at a time, with the event log's generations rolled every second, and not
one ERROR line logged by any service."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from client.demo import BET, GRANT, run_demo
from engine import dice
from infra.cluster.runner import Cluster, ClusterConfig
from infra.cluster.status import read_state
from services.common.clock import now_ms
from services.common.topics import Namespace
from services.contracts.topics import TABLE_EVENTS
from tests.helpers import kafka_namespace

pytestmark = pytest.mark.e2e

# A service's line at ERROR or worse as the runner prefixes it ("table-1 | ERROR   ..."), or
# gRPC's C core's own ("gateway | E1204 14:02:11.123 ...").
ERROR_LINE = re.compile(r"^\s*\S+ \| (ERROR |CRITICAL |E\d{4} )")
# An hour of play at the default 60 s rolls 60 generations; a generation is deleted ~17 s after
# it is made here (two periods and the producers' 15 s slack), so PLAY_S of play has the keeper
# deleting generations under the consumers' looks and commits for its second half.
ROTATE_S = 1
PLAY_S = 45.0
FEES = 2 * BET * 8 // 100  # I-11: 8% of each side's stake


async def test_demo_wagered_match_to_three_then_an_hour_of_generations_logs_no_error(
    tmp_path: Path, kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 44 item 2: expected, handled conditions of the embedded log (a generation deleted
    # under a consumer's look, a commit to a topic that is gone) are not errors.
    monkeypatch.setenv("BG_KAFKA_ROTATE_S", str(ROTATE_S))
    namespace = kafka_namespace()
    out = io.StringIO()
    cluster = Cluster(
        ClusterConfig(
            data_dir=tmp_path,
            base_port=0,  # its own Valkey, as `make up` has: no other test's tables in it
            kafka_bootstrap=kafka_bootstrap,
            kafka_namespace=namespace,
        ),
        out,
    )
    await cluster.start()
    started = now_ms()
    more: list[dict[str, Any]] = []
    try:
        state = read_state(tmp_path)
        result = await run_demo(state, timeout_s=300)
        for n in range(20):  # bounded: ~3 s a round
            if now_ms() - started >= PLAY_S * 1000:
                break
            more += await asyncio.gather(
                *(run_demo(state, 300, (f"ann-{n}-{k}", f"bob-{n}-{k}")) for k in range(2))
            )
        gens = await _table_event_generations(kafka_bootstrap, Namespace(namespace))
    finally:
        await cluster.stop()
    errors = [line for line in out.getvalue().splitlines() if ERROR_LINE.match(line)]
    assert errors == [], out.getvalue()[-20_000:]
    # The session was what it says: generations of a second (numbered by seconds since the
    # epoch: the default's minutes would be 60 times smaller numbers), newer ones made as it
    # went, and the first ones deleted during it.
    assert max(gens) > started // (ROTATE_S * 1000), (started, gens)
    assert min(gens) > started // (ROTATE_S * 1000), (started, gens)
    assert len(more) >= 4
    for match in more:
        assert match["end_reason"] == "points" and match["house_fees"] == FEES, match

    players = list(result["balances_before"])
    assert result["balances_before"] == {p: GRANT for p in players}
    winner = result["winner"]
    loser = next(p for p in players if p != winner)
    assert result["end_reason"] == "points" and result["score"][winner] >= 3  # a gammon may pass 3
    assert result["house_fees"] == FEES
    assert result["balances_after"] == {winner: GRANT - BET + 2 * BET - FEES, loser: GRANT - BET}
    # I-27: the revealed seed matches the fingerprint and produced every die of the match.
    rolls = list(zip(result["dice"][::2], result["dice"][1::2], strict=True))
    ok, reason = dice.verify(bytes.fromhex(result["seed"]), result["fingerprint"], rolls)
    assert ok, reason


async def _table_event_generations(bootstrap: str, namespace: Namespace) -> list[int]:
    """The generations of table-events the broker lists now."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        topics = await admin.list_topics()
    finally:
        await admin.close()
    return sorted(gen for _, gen in namespace.generations(TABLE_EVENTS, topics))
