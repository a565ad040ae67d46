"""The table's commit by the lean client vs redis-py: client CPU per commit, side by side.

On a real Valkey, `TableStore.commit` (the real commit script, a casual table's real state and
one event a commit) run one at a time (as a command at half-peak travels) and 20 at once (as
at peak), by `services/common/lean_redis.py` and by redis-py's pooled client
(`services/common/deps.redis_client`), alternated three times. CPU is this process's
(`time.process_time`): the client's side only; Valkey's is the same for both.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bg.events.v1 import events_pb2
from engine import profiles
from engine.machine import new_match
from infra.cluster.embedded import start_valkey
from services.common.clock import now_ms
from services.common.connections import redis_client
from services.common.lean_redis import LeanRedis
from services.table.adapters.redis_store import TableStore
from services.table.ports import Commit, TableMeta

COMMITS = 3000
ROUNDS = 3
STATE = new_match(profiles.casual(3), b"\x01" * 16, 0).state


def _event(table_id: str, seq: int) -> bytes:
    ev = events_pb2.TableEvent(event_id=f"{table_id}:{seq}", table_id=table_id, seq=seq)
    ev.turn_started.seat = seq % 2
    return ev.SerializeToString()


async def _commits(store: TableStore, tables: int) -> float:
    """CPU ms per commit: `tables` tables committing at once, COMMITS in all."""
    seqs = {}
    for i in range(tables):
        table_id = f"t{i}-{time.monotonic_ns()}"
        meta = TableMeta(table_id=table_id, match_id="m", player_ids=["ann", "bob"])
        result = await store.commit(
            Commit(table_id, None, STATE, None, "", [_event(table_id, 1)], now_ms(), meta=meta)
        )
        assert result.status == "OK", result
        seqs[table_id] = result.seq

    async def table(table_id: str) -> None:
        for _ in range(COMMITS // tables):
            seq = seqs[table_id]
            update = b"u" * 500  # the seat views and events the commit publishes
            c = Commit(
                table_id,
                seq,
                STATE,
                10_000,
                f"c{seq}",
                [_event(table_id, seq + 1)],
                now_ms(),
                update=update,
                kinds=["turn_started"],
            )
            result = await store.commit(c)
            assert result.status == "OK", result
            seqs[table_id] = result.seq

    started = time.process_time()
    await asyncio.gather(*(table(t) for t in seqs))
    return (time.process_time() - started) * 1000 / COMMITS


async def _main(url: str) -> None:
    pooled: Any = redis_client(url)
    lean = LeanRedis(url)
    by_py, by_lean = TableStore(pooled), TableStore(pooled, lean)
    try:
        for tables in (1, 20):
            await _commits(by_py, tables)  # warm up: connections, the script loaded
            await _commits(by_lean, tables)
            py, le = [], []
            for _ in range(ROUNDS):
                py.append(await _commits(by_py, tables))
                le.append(await _commits(by_lean, tables))
            print(
                f"   {tables:2d} at once: redis-py {min(py):.3f} ms CPU per commit, lean "
                f"{min(le):.3f} (best of {ROUNDS}); lean/redis-py {min(le) / min(py):.2f}x"
            )
    finally:
        await lean.aclose()
        await pooled.aclose()


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_valkey(Path(tmp) / "valkey")
        try:
            asyncio.run(_main(server.address))
        finally:
            server.stop()


if __name__ == "__main__":
    run()
