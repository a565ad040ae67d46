"""Issue 42, requirements 1 and 2: test hosts (network namespaces on a bridge, each with its own
address) and the network faults between them, on real namespaces and real TCP and UDP: a
partition into groups, one direction dropped, a host isolated, healing; and everything taken
down afterwards. (Root and Debian's iproute2 and iptables: .ci/run installs iptables.)"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.cluster import hosts
from infra.cluster.hosts import HostsTaken, Network

pytestmark = pytest.mark.integration

# A bounded server: answers TCP connections and UDP datagrams on PORT for LIFE seconds, and
# writes down every datagram it got (a one-way loss shows in what arrived, not in replies).
SERVER = """
import socket, sys, threading, time
port, life, got = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("0.0.0.0", port)); tcp.listen(); tcp.settimeout(0.2)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind(("0.0.0.0", port))
udp.settimeout(0.2)
def serve_udp():
    end = time.monotonic() + life
    while time.monotonic() < end:
        try:
            data, peer = udp.recvfrom(100)
            with open(got, "ab") as f:
                f.write(data + b"\\n")
            udp.sendto(b"udp:" + data, peer)
        except OSError:
            pass
threading.Thread(target=serve_udp, daemon=True).start()
end = time.monotonic() + life
while time.monotonic() < end:
    try:
        conn, _ = tcp.accept()
        conn.sendall(b"tcp-ok"); conn.close()
    except OSError:
        pass
"""

# Asks `address` over TCP (or UDP) and prints what came back, or "none".
CLIENT = """
import socket, sys
address, port, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    if kind == "tcp":
        s = socket.create_connection((address, port), timeout=1.0)
        print(s.recv(20).decode())
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1.0)
        s.sendto(sys.argv[4].encode(), (address, port)); print(s.recvfrom(100)[0].decode())
except OSError:
    print("none")
"""
PORT = 7331


def _prefix() -> str:
    """A prefix of this test's own (a letter last: a prefix must end with one)."""
    return f"bgt{uuid.uuid4().hex[:4]}x"


def _own_network(names: list[str], owner: str = "") -> Network:
    """A network with a prefix and a net of this test's own: the tests run side by side on
    several workers, and a net another holds is refused (as it should be)."""
    for net in random.sample(range(150, 200), 50):
        network = Network(prefix=_prefix(), net=net, owner=owner)
        try:
            network.create(names)
        except HostsTaken:
            continue
        return network
    raise AssertionError("no free net in 150..199")


@pytest.fixture
def network(tmp_path: Path) -> Iterator[Network]:
    net = _own_network(["a", "b", "c"])
    servers = [
        subprocess.Popen(
            [*net.run_in(h), sys.executable, "-c", SERVER, str(PORT), "60", str(tmp_path / h)]
        )
        for h in ("a", "b", "c")
    ]
    time.sleep(0.5)
    try:
        yield net
    finally:
        for server in servers:
            server.kill()
            server.wait(5)
        net.remove()


def _ask(net: Network, frm: str | None, to: str, kind: str = "tcp", say: str = "ping") -> str:
    prefix = net.run_in(frm) if frm else []
    argv = [*prefix, sys.executable, "-c", CLIENT, net.hosts[to], str(PORT), kind, say]
    return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()


def test_hosts_reach_each_other_and_the_machine_reaches_them(network: Network) -> None:
    assert set(network.hosts) == {"a", "b", "c"}
    assert len(set(network.hosts.values())) == 3
    assert _ask(network, "a", "b") == "tcp-ok" and _ask(network, "c", "a") == "tcp-ok"
    assert _ask(network, None, "b") == "tcp-ok"  # players on the machine reach a host


def test_a_partition_cuts_across_groups_and_heals(network: Network) -> None:
    network.partition(["a"], ["b", "c"])
    assert _ask(network, "a", "b") == "none" and _ask(network, "c", "a") == "none"
    assert _ask(network, "b", "c") == "tcp-ok"  # within a group
    network.heal()
    assert _ask(network, "a", "b") == "tcp-ok" and _ask(network, "c", "a") == "tcp-ok"


def test_one_direction_dropped_and_an_isolated_host(network: Network, tmp_path: Path) -> None:
    def received(host: str) -> str:
        return (tmp_path / host).read_text() if (tmp_path / host).exists() else ""

    network.drop("a", "b")  # a's packets lost on the way to b; b's still reach a
    _ask(network, "a", "b", "udp", "from-a")
    _ask(network, "b", "a", "udp", "from-b")  # arrives; a's answer is what gets lost
    assert "from-a" not in received("b") and "from-b" in received("a")
    assert _ask(network, "a", "b") == "none"  # no TCP either way: b's answers cannot land
    assert _ask(network, "a", "c") == "tcp-ok"
    network.heal()
    network.isolate("c")
    assert _ask(network, "a", "c") == "none" and _ask(network, "c", "b") == "none"
    assert _ask(network, None, "c") == "none"  # nor from the machine
    assert _ask(network, "a", "b") == "tcp-ok"


def test_removing_the_network_leaves_nothing() -> None:
    net = _own_network(["x"])
    net.remove()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "link", "show"], capture_output=True, text=True).stdout
    assert net.prefix not in namespaces and f"{net.prefix}br" not in links


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_a_prefix_or_net_a_live_network_holds_is_refused_and_its_hosts_kept() -> None:
    """Issue 58, item 2: a second drill (or a test beside one) asking for a live network's
    prefix or net is refused, saying whose it is, and removes nothing of it."""
    first = _own_network(["a"], owner="data dir /tmp/drill")
    try:
        for second in (Network(first.prefix, first.net), Network(_prefix(), first.net)):
            with pytest.raises(HostsTaken) as refused:
                second.create(["a"])
            assert f"pid {os.getpid()}, data dir /tmp/drill" in str(refused.value)
            assert not second.created
        said = str(_refusal(Network(first.prefix, first.net)))
        assert f"hosts prefix {first.prefix!r} is held" in said and "--hosts-prefix" in said
        said = str(_refusal(Network(_prefix(), first.net)))
        assert f"hosts net 10.{first.net}.0.0/24 is held" in said and "--hosts-net" in said
        assert first.namespace("a") in _namespaces()  # untouched by the refusals
        links = subprocess.run(["ip", "link", "show"], capture_output=True, text=True).stdout
        assert f"{first.bridge}:" in links
    finally:
        first.remove()
    again = Network(first.prefix, first.net)  # released: free for the next
    again.create(["a"])
    again.remove()


def _refusal(network: Network) -> HostsTaken:
    with pytest.raises(HostsTaken) as refused:
        network.create(["a"])
    return refused.value


def test_a_dead_processs_hosts_are_swept_and_its_prefix_free(tmp_path: Path) -> None:
    """A network whose maker was killed (its claim names a pid that no longer runs) holds
    nothing: the next start of any prefix sweeps its hosts, and its prefix may be taken."""
    dead = _own_network(["a"])
    claim = hosts.CLAIMS / f"{dead.prefix}.json"
    record = json.loads(claim.read_text())
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    claim.write_text(json.dumps({**record, "pid": int(gone.stdout), "started": "0"}))
    other = _own_network(["a"])
    try:
        assert dead.namespace("a") not in _namespaces() and not claim.exists()
        assert other.namespace("a") in _namespaces()
    finally:
        other.remove()


@pytest.mark.parametrize(
    ("prefix", "net"), [("bgh-", 213), ("BGH", 213), ("bgh1", 213), ("x", 213), ("bgh", 0)]
)
def test_a_prefix_or_net_no_network_may_have_is_refused(prefix: str, net: int) -> None:
    with pytest.raises(ValueError, match=r"hosts (prefix|net)"):
        Network(prefix, net).create(["a"])
