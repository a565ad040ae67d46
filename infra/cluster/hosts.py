"""Test hosts on one machine (issue 42): each process in its own network namespace with its own
address on a private bridge, as separate machines would be, and the network faults a Jepsen-style
test or an operator's drill needs between them.

A `Network` owns a bridge (`<prefix>br`, the host's own address .1 on it, so players on the host
reach the gateways) and one namespace per host (`<prefix>-<name>`, reached by a veth pair), with
addresses 10.<net>.0.<n>/24. `run_in(host)` is the argv prefix that starts a process inside a
host. Faults are iptables rules inside the namespaces (Debian's iptables; `tc netem` is not in
these kernels):
- `isolate(host)`: the host talks to nobody (nor the bridge's host side);
- `partition([...], [...])`: groups that reach each other within, not across;
- `drop(src, dst)`: packets from `src` to `dst` dropped on arrival at `dst`: one way only
  (replies from `dst` still reach `src`, but no TCP connection can complete either way);
- `heal()`: every rule gone.
Processes' own faults (pause, kill -9, a skewed clock) are the runner's: SIGSTOP, SIGKILL, and
`BG_CLOCK_SKEW_MS` in a process's environment.

Everything needs root (namespaces, links, iptables); without it `Network.create` raises
`NeedsRoot` saying so. `remove()` takes down what `create()` made, and `sweep(prefix)` what a
killed run left behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field


class NeedsRoot(RuntimeError):
    """Test hosts need root (network namespaces, links and iptables) and Debian's iproute2
    and iptables."""


def _ip(*args: str, ns: str = "") -> None:
    argv = ["ip", *args] if not ns else ["ip", "netns", "exec", ns, "ip", *args]
    subprocess.run(argv, check=True, capture_output=True)


def _iptables(ns: str, *args: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "iptables", *args], check=True, capture_output=True)


def check_can_make_hosts() -> None:
    if os.geteuid() != 0:
        raise NeedsRoot("test hosts need root: network namespaces, veth links and iptables")
    missing = [tool for tool in ("ip", "iptables") if shutil.which(tool) is None]
    if missing:
        raise NeedsRoot(f"test hosts need {' and '.join(missing)} (apt install iproute2 iptables)")


@dataclass
class Network:
    prefix: str = "bgh"  # names: <prefix>br, <prefix>-<host>, <prefix>-<host>-v
    net: int = 213  # addresses 10.<net>.0.x
    hosts: dict[str, str] = field(default_factory=dict)  # host -> its address
    created: bool = False

    @property
    def bridge(self) -> str:
        return f"{self.prefix}br"

    @property
    def gateway_address(self) -> str:
        """The machine's own address on the bridge (what the hosts see the players come from)."""
        return f"10.{self.net}.0.1"

    def namespace(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def create(self, names: list[str]) -> dict[str, str]:
        """The bridge and a namespace per name, each with its address; returns them."""
        check_can_make_hosts()
        if len(names) > 250:
            raise ValueError("at most 250 hosts on one bridge")
        sweep(self.prefix)
        _ip("link", "add", self.bridge, "type", "bridge")
        self.created = True
        _ip("addr", "add", f"{self.gateway_address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for n, name in enumerate(names, start=11):
            ns, veth = self.namespace(name), f"{self.prefix}{n}"
            address = f"10.{self.net}.0.{n}"
            _ip("netns", "add", ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "master", self.bridge)
            _ip("link", "set", veth, "up")
            _ip("addr", "add", f"{address}/24", "dev", "eth0", ns=ns)
            _ip("link", "set", "eth0", "up", ns=ns)
            _ip("link", "set", "lo", "up", ns=ns)
            _ip("route", "add", "default", "via", self.gateway_address, ns=ns)
            self.hosts[name] = address
        return dict(self.hosts)

    def run_in(self, host: str) -> list[str]:
        """The argv prefix that runs a command on `host`."""
        return ["ip", "netns", "exec", self.namespace(host)]

    # -- faults ------------------------------------------------------------------------------

    def _drop_from(self, host: str, source: str) -> None:
        _iptables(self.namespace(host), "-A", "INPUT", "-s", source, "-j", "DROP")

    def isolate(self, host: str) -> None:
        """`host` reaches nobody and nobody reaches it (the bridge's host side included)."""
        for other, address in self.hosts.items():
            if other != host:
                self._drop_from(host, address)
                self._drop_from(other, self.hosts[host])
        self._drop_from(host, self.gateway_address)

    def partition(self, *groups: list[str]) -> None:
        """Hosts reach the hosts of their own group only (a host in no group is untouched)."""
        for i, group in enumerate(groups):
            for j, others in enumerate(groups):
                if i == j:
                    continue
                for host in group:
                    for other in others:
                        self._drop_from(host, self.hosts[other])

    def drop(self, source: str, destination: str) -> None:
        """Packets from `source` to `destination` are lost: one way only."""
        self._drop_from(destination, self.hosts[source])

    def heal(self) -> None:
        for host in self.hosts:
            _iptables(self.namespace(host), "-F", "INPUT")

    def remove(self) -> None:
        sweep(self.prefix)
        self.hosts.clear()
        self.created = False


def sweep(prefix: str) -> None:
    """Take down every namespace and the bridge of `prefix` (a run killed before its cleanup
    leaves them behind); missing ones are fine."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    for line in listed.stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(f"{prefix}-"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
    subprocess.run(["ip", "link", "del", f"{prefix}br"], capture_output=True)
    # A namespace a dying process still held outlives its `del` for a moment, and with it the
    # host end of its veth pair: delete those by name (either end takes the pair down).
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    for line in links.stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if line.count(":") >= 2 else ""
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            subprocess.run(["ip", "link", "del", name], capture_output=True)
