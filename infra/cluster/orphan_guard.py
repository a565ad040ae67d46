"""`python -m infra.cluster.orphan_guard CMD ARG...`: exec CMD after asking the kernel to
SIGTERM it when its parent (the cluster runner) dies, so even a runner killed with SIGKILL
leaves no process.

A launcher rather than `preexec_fn`: Python code between fork and exec in a process with threads
(the runner's gRPC health probes) can deadlock or crash the child; here the prctl runs in a
fresh, single-threaded interpreter, and the setting survives the exec.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PARENT_ENV = "BG_ORPHAN_GUARD_PARENT"  # the runner's pid, set by infra.cluster.processes
USER_ENV = "BG_ORPHAN_GUARD_USER"  # run CMD as this system user (PostgreSQL refuses root)
NETNS_ENV = "BG_ORPHAN_GUARD_NETNS"  # run CMD in this network namespace (a test host)
CLONE_NEWNET = 0x40000000


def _enter(namespace: str) -> None:
    """Join the network namespace `ip netns add` made (as `ip netns exec` does, without its
    mount namespace: the files are the machine's). Before the change of user: it needs root."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise SystemExit(f"cannot enter network namespace {namespace}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _become(user: str) -> None:
    """Drop to `user` and its own group only. Before the prctl: a change of user clears the
    parent-death signal."""
    import pwd

    entry = pwd.getpwnam(user)
    os.setgroups([])
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    os.environ["HOME"] = entry.pw_dir


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python -m infra.cluster.orphan_guard CMD [ARG...]")
    if namespace := os.environ.pop(NETNS_ENV, ""):
        _enter(namespace)
    if user := os.environ.pop(USER_ENV, ""):
        _become(user)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        parent = os.environ.pop(PARENT_ENV, "")
        if parent and os.getppid() != int(parent):  # it died before the prctl: stay unborn
            raise SystemExit(1)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
