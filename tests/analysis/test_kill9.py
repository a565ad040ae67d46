"""Issue 28: the analysis service survives a kill -9 mid-match. The real process reads real
Kafka (the session's Tansu) and real SQLite; it is killed while a match is being analysed and
started again; afterwards every match is analysed exactly once (one result, one error-rate row
per player), none is skipped, the killed one was taken twice and its stored analysis equals one
computed here."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bg.analysis.v1 import analysis_pb2
from engine import profiles
from infra.cluster.embedded import create_topics, free_port
from services.analysis.judge import judge
from services.common import kafka_log
from services.contracts.event_records import commit_record
from services.contracts.topics import TABLE_EVENTS
from tests.analysis.test_record import _end_event
from tests.helpers import kafka_namespace, scrape_metrics

pytestmark = pytest.mark.integration
MATCHES = 4


def _spawn(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "services.analysis"], env={**os.environ, **env},
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            return list(conn.execute(sql))
        except sqlite3.OperationalError:  # not migrated yet
            return []


async def _until(check: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {seconds:.0f} s: {what}")


async def test_kill_9_mid_match_analyses_every_match_exactly_once(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    namespace = kafka_namespace()
    await create_topics(kafka_bootstrap, {f"{namespace}.{TABLE_EVENTS}": 1})
    ends = [_end_event(profiles.casual(5, cube=True), seed) for seed in range(10, 10 + MATCHES)]
    for n, end in enumerate(ends):
        end.match_id = f"m{n}"
    producer = kafka_log.producer(kafka_bootstrap, False, "kill9-test")
    await producer.start()
    try:
        for end in ends:
            value, headers = commit_record([end.SerializeToString()], ["match_ended"])
            await producer.send_and_wait(
                f"{namespace}.{TABLE_EVENTS}", value, key=end.table_id.encode(), headers=headers
            )
    finally:
        await producer.stop()

    db = tmp_path / "analysis.db"
    metrics_port = free_port()
    env = {
        "BG_GRPC_PORT": str(free_port()), "BG_METRICS_PORT": str(metrics_port),
        "BG_DATABASE_URL": f"sqlite+aiosqlite:///{db}", "BG_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "BG_KAFKA_LOG": "kafka", "BG_KAFKA_NAMESPACE": namespace, "BG_REPLICA": "analysis-1",
        "BG_LOG_FORMAT": "text", "BG_NICE": "0",
    }  # fmt: skip
    log = tmp_path / "analysis.log"
    proc = _spawn(env, log)
    try:
        # Killed while a match is held by its worker (claimed, not yet stored).
        held = "SELECT match_id FROM analyses WHERE state = 'queued' AND claimed_until_ms > 0"
        await _until(lambda: _rows(db, held), 120, "a match being analysed")
        (killed,) = _rows(db, held)[0]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert _rows(db, f"SELECT state FROM analyses WHERE match_id = '{killed}'") == [("queued",)]
        proc = _spawn(env, log)  # the same replica name: it lets go of its old claim at once
        done = "SELECT count(*) FROM analyses WHERE state = 'done'"
        await _until(lambda: _rows(db, done) == [(MATCHES,)], 240, log.read_text()[-2000:])
        metrics = await scrape_metrics(metrics_port)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    rows = _rows(db, "SELECT match_id, state, attempts FROM analyses ORDER BY match_id")
    assert [(m, s) for m, s, _ in rows] == [(f"m{n}", "done") for n in range(MATCHES)]
    attempts = {m: a for m, _, a in rows}
    assert attempts[str(killed)] == 2 and sum(attempts.values()) == MATCHES + 1
    per_player = _rows(db, "SELECT match_id, count(*) FROM player_errors GROUP BY match_id")
    assert sorted(per_player) == [(f"m{n}", 2) for n in range(MATCHES)]
    # No worker found its result stored already (the restarted consumer's redelivered end
    # events queued nothing: the rows above are one per match).
    assert 'bg_analysis_matches_total{result="duplicate"}' not in metrics or (
        'bg_analysis_matches_total{result="duplicate"} 0.0' in metrics
    )
    (stored,) = _rows(db, f"SELECT result FROM analyses WHERE match_id = '{killed}'")[0:1]
    found = analysis_pb2.MatchAnalysis.FromString(bytes(stored[0]))
    here = judge(next(e for e in ends if e.match_id == killed).SerializeToString())
    assert list(found.decisions) == list(here.decisions) and found.decisions
