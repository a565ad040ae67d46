"""Issue 42, requirements 1 and 2 from the operator's side: `bgcluster up --hosts` puts every
process on its own test host (its own address; the partition suite plays through such a
cluster), and `bgcluster fault` cuts and heals the network between them, pauses a process and
skews one's clock on the running cluster; bad names are refused saying what exists; a cluster
without --hosts is told how to get one; without root, --hosts is refused saying so."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from infra.cluster.runner import Cluster, ClusterConfig, StartupError
from tests.helpers import running_cluster

pytestmark = pytest.mark.e2e
BGCLUSTER = str(Path(sys.executable).parent / "bgcluster")


def _fault(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [BGCLUSTER, "fault", "--data-dir", str(data), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=90)


def _rules(namespace: str) -> str:
    argv = ["ip", "netns", "exec", namespace, "iptables", "-S", "INPUT"]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def test_a_cluster_on_hosts_and_the_operators_faults(tmp_path: Path) -> None:
    data = tmp_path
    hosts_of_its_own = ("--hosts", "--hosts-prefix", "bgf", "--hosts-net", "217")
    with running_cluster(data, {"BG_LOG_LEVEL": "WARNING"}, *hosts_of_its_own) as state:
        hosts = state["hosts"]["addresses"]
        # Every process on its own address; each service serves on its host's.
        assert len(set(hosts.values())) == len(hosts) >= 10
        for s in state["services"]:
            assert s["address"].startswith(hosts[s["instance"]] + ":")
        assert state["infra"] and all(hosts[p["name"]] in p["address"] for p in state["infra"])
        listed = json.loads(_fault(data, "hosts").stdout)
        assert listed == hosts
        ns = f"{state['hosts']['prefix']}-valkey"
        done = _fault(data, "partition", "table-1,valkey", "gateway,table-2")
        assert done.returncode == 0, done.stdout
        assert f"-s {hosts['gateway']}/32 -j DROP" in _rules(ns)
        assert f"-s {hosts['table-2']}/32 -j DROP" in _rules(ns)
        assert _fault(data, "heal").returncode == 0
        assert "DROP" not in _rules(ns)
        done = _fault(data, "drop", "valkey", "table-2")
        assert f"-s {hosts['valkey']}/32 -j DROP" in _rules(f"{state['hosts']['prefix']}-table-2")
        assert "DROP" not in _rules(ns)  # one way only
        _fault(data, "heal")

        refused = _fault(data, "isolate", "nosuch")
        assert refused.returncode == 2 and "no host named nosuch; the hosts: valkey" in (
            refused.stdout
        )
        old = next(s["pid"] for s in state["services"] if s["instance"] == "wallet")
        assert _fault(data, "pause", "wallet").returncode == 0
        assert Path(f"/proc/{old}/stat").read_text().split()[2] == "T"  # stopped
        assert _fault(data, "resume", "wallet").returncode == 0
        assert Path(f"/proc/{old}/stat").read_text().split()[2] != "T"

        skewed = _fault(data, "skew", "table-1", "2000")
        assert skewed.returncode == 0 and "clock +2000 ms off" in skewed.stdout
        pid = int(skewed.stdout.rsplit("pid ", 1)[1])
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"BG_CLOCK_SKEW_MS=2000" in environ

        # Issue 58, item 2: a second drill asking for these hosts is refused and takes nothing
        # down; one with a prefix and net of its own would start beside it.
        second = [BGCLUSTER, "up", "--data-dir", str(tmp_path / "second"), "--base-port", "0"]
        taken = subprocess.run(
            [*second, *hosts_of_its_own], capture_output=True, text=True, timeout=60
        )
        assert taken.returncode == 1
        assert "hosts prefix 'bgf' is held by a running cluster (pid" in taken.stdout
        assert f"data dir {data.resolve()}" in taken.stdout
        bad = subprocess.run(
            [*second, "--hosts", "--hosts-prefix", "bg-f"], capture_output=True, text=True
        )
        assert bad.returncode == 2 and "hosts prefix 'bg-f': 2-8 lower-case" in bad.stderr
        now = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
        assert all(f"bgf-{name}" in now.stdout for name in hosts)
        assert _fault(data, "isolate", "kafka").returncode == 0  # still this cluster's hosts
        _fault(data, "heal")
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{state['hosts']['prefix']}-" not in namespaces  # the runner removed its hosts


def test_network_faults_need_hosts_and_hosts_need_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cluster.json").write_text(json.dumps({"services": [], "hosts": None}))
    told = _fault(tmp_path, "isolate", "table-1")
    assert told.returncode == 2 and "start it with `bgcluster up --hosts`" in told.stdout
    assert _fault(tmp_path / "none", "heal").returncode == 3  # no cluster at all

    monkeypatch.setattr("infra.cluster.hosts.os.geteuid", lambda: 1000)
    cluster = Cluster(ClusterConfig(hosts=True, data_dir=tmp_path, base_port=0), io.StringIO())
    with pytest.raises(StartupError, match="--hosts: test hosts need root"):
        asyncio.run(cluster.start())
