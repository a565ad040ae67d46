"""The cluster runner: every service as a process to SERVING, clean stop, loud failures."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infra.cluster.runner import Cluster, ClusterConfig, StartupError
from services.common.topics import Namespace
from services.contracts.topics import TOPICS
from tests.helpers import kafka_namespace

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose: it only waits to be reaped.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _status_json(data_dir: Path) -> tuple[int, list[dict[str, Any]] | None]:
    done = subprocess.run(
        [BIN / "bgcluster", "status", "--data-dir", str(data_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None


def test_make_up_serves_everything_and_sigterm_leaves_no_process(tmp_path: Path) -> None:
    """Issue 2 'done when': make up -> status --json all SERVING; SIGTERM -> no process left."""
    data = tmp_path / "data"
    log = (tmp_path / "up.log").open("w")
    make = subprocess.Popen(
        ["make", "-s", "up", f"ARGS=--base-port 0 --data-dir {data}"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        rows = None
        for _ in range(600):  # bounded: at most ~60 s of polling plus call time
            code, rows = _status_json(data) if (data / "cluster.json").exists() else (3, None)
            if code == 0:
                break
            assert make.poll() is None, (tmp_path / "up.log").read_text()
            time.sleep(0.1)
        assert rows is not None and code == 0, (tmp_path / "up.log").read_text()
        assert sorted({r["name"] for r in rows}) == [
            "analysis",
            "bots",
            "gateway",
            "identity",
            "kafka",
            "leaderboard",
            "matchmaking",
            "table",
            "valkey",
            "wallet",
        ]  # fmt: skip  (Tansu on memory: no SeaweedFS unless --kafka-storage s3)
        assert sum(r["name"] == "table" for r in rows) == 2
        # Services by their gRPC health, infrastructure by its own check of what it serves.
        assert all(r["status"] == "SERVING" for r in rows)
        assert all(r["address"] and r["restarts"] == 0 for r in rows)
        state = json.loads((data / "cluster.json").read_text())
        pids = [s["pid"] for s in state["services"]] + [p["pid"] for p in state["infra"]]
        pids.append(state["runner_pid"])
        assert len(pids) == 12  # 9 services, Valkey, Tansu, the runner

        make.send_signal(signal.SIGTERM)  # to make itself, not its process group
        make.wait(timeout=20)
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in pids if _alive(p)] == []
        output = (tmp_path / "up.log").read_text()
        assert "all services SERVING" in output and "bgcluster: stopped" in output
        assert not (data / "cluster.json").exists()
        assert _status_json(data)[0] == 3  # status knows no cluster runs
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
        log.close()


async def test_service_that_fails_to_start_stops_everything(
    tmp_path: Path, valkey_url: str, kafka_bootstrap: str
) -> None:
    """A bad setting in one replica: start fails naming it and why; nothing is left running."""
    out = io.StringIO()
    cluster = Cluster(
        ClusterConfig(
            data_dir=tmp_path,
            base_port=0,
            redis_url=valkey_url,
            kafka_bootstrap=kafka_bootstrap,
            kafka_namespace=kafka_namespace(),
            service_env={"table-2": {"BG_SHUTDOWN_GRACE_S": "soon"}},
        ),
        out,
    )
    with pytest.raises(StartupError) as err:
        await cluster.start()
    message = str(err.value)
    assert "table-2 failed to start: exited with code 2" in message
    assert "BG_SHUTDOWN_GRACE_S='soon': expected a number" in message
    assert cluster.pids() and not any(_alive(p) for p in cluster.pids())
    assert cluster.infra == []  # external Redis and Kafka were used, not started
    assert not (tmp_path / "cluster.json").exists()


async def test_supervision_restarts_what_dies_and_stop_leaves_nothing(
    tmp_path: Path, valkey_url: str, kafka_bootstrap: str
) -> None:
    """Issue 13 req. 2: a kill -9 is reported loudly and the process comes back (new pid,
    SERVING, restart counted); `bgcluster restart NAME` does the same on request; stopping
    leaves no process behind, restarted ones included."""
    from infra.cluster.status import UnknownProcess, restart

    out = io.StringIO()
    cluster = Cluster(
        ClusterConfig(
            replicas={"table": 1},
            data_dir=tmp_path, base_port=0,
            redis_url=valkey_url, kafka_bootstrap=kafka_bootstrap,
            kafka_namespace=kafka_namespace(),
        ),
        out,
    )  # fmt: skip
    await cluster.start()
    first_pids = list(cluster.pids())
    try:
        state = json.loads((tmp_path / "cluster.json").read_text())
        assert [s["instance"] for s in state["services"]] == [
            "gateway", "matchmaking", "table-1", "wallet", "leaderboard", "bots", "analysis",
            "identity",
        ]  # fmt: skip
        # On the shared broker this cluster's events are in topics of its own namespace: the
        # generations of its embedded log (a partition each for one wallet and one
        # leaderboard), its incarnation marker; its groups carry the prefix too.
        namespace = Namespace(state["kafka_namespace"])
        generations = await _generations(kafka_bootstrap, namespace)
        assert all(len(p) >= 2 and set(p) == {1} for p in generations.values()), generations
        victim = next(i for i in cluster.instances if i.name == "wallet")
        assert victim.process is not None and victim.process.pid is not None
        dead_pid = victim.process.pid
        os.kill(dead_pid, signal.SIGKILL)
        rows: dict[str, dict[str, Any]] = {}
        for _ in range(300):  # bounded: ~30 s
            rows = {r["instance"]: r for r in await _collect(tmp_path)}
            if rows["wallet"]["pid"] != dead_pid and rows["wallet"]["status"] == "SERVING":
                break
            await asyncio.sleep(0.1)
        assert rows["wallet"]["status"] == "SERVING" and rows["wallet"]["restarts"] == 1
        assert rows["wallet"]["pid"] != dead_pid and not _alive(dead_pid)
        assert cluster.failures == ["wallet DIED (exit code -9); starting it again"]
        assert "!!! wallet DIED (exit code -9); starting it again" in out.getvalue()
        assert rows["gateway"]["restarts"] == 0

        old = rows["table-1"]["pid"]
        row = await restart(tmp_path, "table-1")
        assert row["status"] == "SERVING" and row["pid"] != old and row["restarts"] == 1
        with pytest.raises(UnknownProcess, match="no process named 'table-9'"):
            await restart(tmp_path, "table-9")
    finally:
        await cluster.stop()
    everyone = set(first_pids) | set(cluster.pids())
    assert len(everyone) == len(first_pids) + 2
    assert not any(_alive(p) for p in everyone)


async def _generations(bootstrap: str, namespace: Namespace) -> dict[str, list[int]]:
    """The partition counts of each of the namespace's logical topics' generations, once the
    keepers have made the current and next ones (bounded: ~30 s)."""
    from aiokafka import AIOKafkaConsumer

    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await reader.start()
    try:
        found: dict[str, list[int]] = {}
        for _ in range(150):
            cluster = await reader._client.fetch_all_metadata()
            found = {
                logical: [
                    len(cluster.partitions_for_topic(t) or ())
                    for t in namespace.generations(logical, cluster.topics()).values()
                ]
                for logical in TOPICS
            }
            if all(len(parts) >= 2 for parts in found.values()):
                break
            await asyncio.sleep(0.2)
        assert namespace.topic("bg-incarnation") in cluster.topics()
        return found
    finally:
        await reader.stop()


async def _collect(data_dir: Path) -> list[dict[str, Any]]:
    from infra.cluster.status import collect

    return await collect(data_dir)


@pytest.mark.skipif(
    __import__("shutil").which("prometheus") is None, reason="Debian's prometheus is not installed"
)
async def test_prometheus_scrapes_every_service(
    tmp_path: Path, valkey_url: str, kafka_bootstrap: str
) -> None:
    """`bgcluster up --prometheus`: a real Prometheus finds every instance up, rules loaded."""
    import asyncio
    import urllib.request

    cluster = Cluster(
        ClusterConfig(
            replicas={"table": 1},
            data_dir=tmp_path, base_port=0, redis_url=valkey_url,
            kafka_bootstrap=kafka_bootstrap, kafka_namespace=kafka_namespace(), prometheus=True,
        ),
        io.StringIO(),
    )  # fmt: skip
    await cluster.start()
    try:
        url = f"http://127.0.0.1:{cluster.prometheus_port}/api/v1/query?query=up"
        results: list[dict[str, object]] = []
        for _ in range(200):
            try:
                body = await asyncio.to_thread(
                    lambda: urllib.request.urlopen(url, timeout=2).read()
                )
                results = json.loads(body)["data"]["result"]
                if len(results) == 8 and all(r["value"][1] == "1" for r in results):  # type: ignore[index]
                    break
            except OSError:
                pass
            await asyncio.sleep(0.2)
        assert sorted(r["metric"]["service"] for r in results) == [  # type: ignore[index]
            "analysis", "bots", "gateway", "identity", "leaderboard", "matchmaking", "table",
            "wallet",
        ]  # fmt: skip
        rules_url = f"http://127.0.0.1:{cluster.prometheus_port}/api/v1/rules"
        rules = json.loads(
            await asyncio.to_thread(lambda: urllib.request.urlopen(rules_url, timeout=2).read())
        )
        names = {r["name"] for g in rules["data"]["groups"] for r in g["rules"]}
        assert "WalletInvariantBreach" in names and "ClockLate" in names
    finally:
        await cluster.stop()
