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

Several networks live side by side (an operator's drill and a test, two drills), each with its
own prefix and net. A network claims both while it lives (a file per network under CLAIMS,
naming the process that made it): `create` refuses with `HostsTaken` a prefix or net a live
process holds, and removes only hosts no live process owns (its own prefix's, and those of
claims whose process died), never another live network's.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CLAIMS = Path("/run/bgcluster/hosts")  # <prefix>.json: the live networks and who made them
# 2-8 characters, lower-case letters and digits, a letter first and last: a link name then
# belongs to one prefix only (a veth pair's host end is <prefix><digits>), and the longest
# name, <prefix>br or <prefix><3 digits>, fits the kernel's 15.
PREFIX = re.compile(r"[a-z](?:[a-z0-9]{0,6}[a-z])")


class NeedsRoot(RuntimeError):
    """Test hosts need root (network namespaces, links and iptables) and Debian's iproute2
    and iptables."""


class HostsTaken(RuntimeError):
    """The prefix or the net asked for belongs to a network a live process made."""


def check_prefix_and_net(prefix: str, net: int) -> None:
    """ValueError, saying what is allowed, for a prefix or net no network may have."""
    if not PREFIX.fullmatch(prefix):
        raise ValueError(
            f"hosts prefix {prefix!r}: 2-8 lower-case letters and digits, "
            "beginning and ending with a letter"
        )
    if not 1 <= net <= 254:
        raise ValueError(f"hosts net {net}: 1..254 (the hosts' addresses are 10.<net>.0.x)")


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
    prefix: str = "bgh"  # names: <prefix>br, <prefix>-<host>, <prefix><n> (a veth's host end)
    net: int = 213  # addresses 10.<net>.0.x
    hosts: dict[str, str] = field(default_factory=dict)  # host -> its address
    created: bool = False
    owner: str = ""  # who made it, for the message refusing its prefix (a data directory)

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
        check_prefix_and_net(self.prefix, self.net)
        if len(names) > 250:
            raise ValueError("at most 250 hosts on one bridge")
        claim(self.prefix, self.net, self.owner)
        self.created = True  # claimed: remove() takes it all down, this prefix's leftovers too
        sweep(self.prefix)
        _ip("link", "add", self.bridge, "type", "bridge")
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
        release(self.prefix)


def claim(prefix: str, net: int, owner: str = "") -> None:
    """Claim `prefix` and `net` for this process, or raise HostsTaken naming the live process
    that holds either. A claim whose process is gone is dropped and its hosts swept."""
    CLAIMS.mkdir(parents=True, exist_ok=True)
    with (CLAIMS / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two starts at once: one claims, the other sees it
        for path in sorted(CLAIMS.glob("*.json")):
            held = _read(path)
            if held is None or not _alive(held):
                if held is not None and held["prefix"] != prefix:
                    sweep(str(held["prefix"]))  # a killed run's: no live process owns them
                path.unlink(missing_ok=True)
                continue
            by = f"pid {held['pid']}" + (f", {held['owner']}" if held.get("owner") else "")
            if held["prefix"] == prefix:
                raise HostsTaken(
                    f"hosts prefix {prefix!r} is held by a running cluster ({by}): stop it, or "
                    "choose another prefix (--hosts-prefix) and net (--hosts-net)"
                )
            if held["net"] == net:
                raise HostsTaken(
                    f"hosts net 10.{net}.0.0/24 is held by a running cluster's hosts "
                    f"{held['prefix']!r} ({by}): choose another net (--hosts-net)"
                )
        record = {"prefix": prefix, "net": net, "pid": os.getpid(), "owner": owner}
        record["started"] = _started(os.getpid())
        (CLAIMS / f"{prefix}.json").write_text(json.dumps(record))


def release(prefix: str) -> None:
    """Give up this process's claim of `prefix` (another's stays)."""
    path = CLAIMS / f"{prefix}.json"
    held = _read(path)
    if held is not None and held["pid"] == os.getpid():
        path.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, object] | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and {"prefix", "net", "pid"} <= found.keys() else None


def _alive(held: dict[str, object]) -> bool:
    """The claiming process still runs: its pid, started when the claim says (not a pid the
    kernel gave to another process since)."""
    pid = held["pid"]
    return isinstance(pid, int) and _started(pid) == held.get("started", "")


def _started(pid: int) -> str:
    """A process's start time in clock ticks since boot ("" when there is no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command's name


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
