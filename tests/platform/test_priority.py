"""services/common/priority.py (BG_NICE): a service's niceness reaches its scheduling group, not
only its threads (autogroup scheduling ignores a member's nice between groups)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from services.common import priority

PROBE = (
    "import os, sys; from pathlib import Path; from services.common import priority; "
    "group = Path('/proc/self/autogroup'); set = priority.apply(int(sys.argv[1])); "
    "words = group.read_text().split() if group.exists() else []; "
    "print(set, os.getpriority(os.PRIO_PROCESS, 0), words[-1] if words else '-')"
)
# The file is empty, not absent, for a process in the boot-time default group (a container's or
# CI runner's session that never called setsid): there is no autogroup of its own, shown "-".
AUTOGROUPS = Path("/proc/self/autogroup").exists()  # a kernel with autogroup scheduling
CAP_SYS_NICE = 23


def _privileged() -> bool:
    """Whether this process (and so its children) may raise a priority: CAP_SYS_NICE."""
    status = Path("/proc/self/status").read_text().splitlines()
    effective = next(int(line.split()[1], 16) for line in status if line.startswith("CapEff:"))
    return bool(effective >> CAP_SYS_NICE & 1)


def _probe(nice: int, new_session: bool) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(nice)],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=new_session,
    )
    return done.stdout.split()


def _group_now() -> str:
    words = Path("/proc/self/autogroup").read_text().split() if AUTOGROUPS else []
    return words[-1] if words else "-"


def test_a_session_leader_lowers_its_own_scheduling_group() -> None:
    # As bgcluster starts every service: a session of its own, so a group of its own.
    expected = ["True", "7", "7"] if AUTOGROUPS else ["False", "7", "-"]
    assert _probe(7, new_session=True) == expected


def test_a_process_in_a_shared_session_leaves_the_group_alone() -> None:
    # The test runner's group holds other processes: only the process's own nice moves.
    assert _probe(7, new_session=False) == ["False", "7", _group_now()]


def test_raising_a_priority_takes_privilege() -> None:
    # The table replicas' default (-5): with CAP_SYS_NICE their clocks fire first on a shared
    # box; without it the process keeps the niceness it had and its new group stays at 0.
    if _privileged():
        expected = ["True", "-5", "-5"] if AUTOGROUPS else ["False", "-5", "-"]
    else:
        own = str(os.getpriority(os.PRIO_PROCESS, 0))
        expected = ["False", own, "0" if AUTOGROUPS else "-"]
    assert _probe(-5, new_session=True) == expected


def test_the_current_niceness_changes_nothing() -> None:
    assert priority.apply(os.getpriority(os.PRIO_PROCESS, 0)) is False
