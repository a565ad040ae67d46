"""Faults on a running cluster, for operators' drills (`bgcluster fault ...`) and the fault tests
(issue 42): the network's between test hosts (a cluster started with `--hosts`), and each
process's own (pause, kill -9, a skewed clock).

Everything acts on the state file the runner keeps (cluster.json in the data directory): the
hosts' names and addresses, and every process's live pid. Network faults are iptables rules in
the hosts' namespaces (infra/cluster/hosts.py), so they outlive this command until `heal`. A
skewed clock is a drill setting for the process's next start (`<data>/drills/<name>.json`,
read by the runner at every start: `BG_CLOCK_SKEW_MS`) and a restart: a clock cannot be skewed
under a running process any more than a machine's can be stepped without it noticing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

from infra.cluster.hosts import Network
from infra.cluster.runner import DRILLS
from infra.cluster.status import UnknownProcess, read_state, restart


class NotOnHosts(RuntimeError):
    """Network faults need a cluster started with `--hosts` (every process on its own host)."""


class Faults:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir

    def _state(self) -> dict[str, Any]:
        return read_state(self.data_dir)

    def network(self) -> Network:
        hosts = self._state().get("hosts")
        if not hosts:
            raise NotOnHosts(
                "network faults need a cluster on test hosts: start it with `bgcluster up --hosts`"
            )
        return Network(hosts["prefix"], hosts["net"], dict(hosts["addresses"]))

    def _hosts(self, *names: str) -> Network:
        network = self.network()
        unknown = [n for n in names if n not in network.hosts]
        if unknown:
            raise UnknownProcess(
                f"no host named {', '.join(unknown)}; the hosts: {', '.join(network.hosts)}"
            )
        return network

    # -- the network ---------------------------------------------------------------------------

    def isolate(self, host: str) -> None:
        self._hosts(host).isolate(host)

    def partition(self, *groups: list[str]) -> None:
        if len(groups) < 2 or any(not g for g in groups):
            raise ValueError("a partition needs two or more groups of hosts")
        self._hosts(*(h for g in groups for h in g)).partition(*groups)

    def drop(self, source: str, destination: str) -> None:
        self._hosts(source, destination).drop(source, destination)

    def heal(self) -> None:
        self.network().heal()

    async def flap(self, host: str, times: int, period_s: float) -> None:
        """`host` isolated and healed `times` times, each state held `period_s / 2` (a link
        that flaps); healed at the end, whatever happens."""
        network = self._hosts(host)
        try:
            for _ in range(times):
                network.isolate(host)
                await asyncio.sleep(period_s / 2)
                network.heal()
                await asyncio.sleep(period_s / 2)
        finally:
            network.heal()

    # -- processes -----------------------------------------------------------------------------

    def pid(self, name: str) -> int:
        state = self._state()
        rows = {s["instance"]: s["pid"] for s in state["services"]}
        rows |= {p["name"]: p["pid"] for p in state.get("infra", [])}
        if name not in rows:
            raise UnknownProcess(f"no process named {name!r}; the cluster runs: {', '.join(rows)}")
        pid = rows[name]
        if not pid:
            raise UnknownProcess(f"{name} has no live process")
        return int(pid)

    def pause(self, name: str) -> None:
        os.kill(self.pid(name), signal.SIGSTOP)

    def resume(self, name: str) -> None:
        os.kill(self.pid(name), signal.SIGCONT)

    def kill(self, name: str) -> int:
        """kill -9; the runner starts it again. Returns the dead pid."""
        pid = self.pid(name)
        os.kill(pid, signal.SIGKILL)
        return pid

    async def skew(self, name: str, ms: int) -> dict[str, Any]:
        """Restart `name` with its wall clock `ms` off (0: true again); returns its new row."""
        self.pid(name)  # a known process, or UnknownProcess
        drill = self.data_dir / DRILLS / f"{name}.json"
        if ms:
            drill.parent.mkdir(parents=True, exist_ok=True)
            drill.write_text(json.dumps({"BG_CLOCK_SKEW_MS": str(ms)}))
        else:
            drill.unlink(missing_ok=True)
        return await restart(self.data_dir, name)
