"""services/common/priority.py (BG_NICE): a service's niceness reaches its scheduling group, not
only its threads (autogroup scheduling ignores a member's nice between groups)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.common import priority

PROBE = (
    "import os, sys; from services.common import priority; "
    "print(priority.apply(int(sys.argv[1])), os.getpriority(os.PRIO_PROCESS, 0), "
    "open('/proc/self/autogroup').read().split()[-1])"
)
needs_autogroup = pytest.mark.skipif(
    not Path("/proc/self/autogroup").exists(), reason="kernel without autogroup scheduling"
)


def _probe(nice: int, new_session: bool) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(nice)],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=new_session,
    )
    return done.stdout.split()


@needs_autogroup
def test_a_session_leader_lowers_its_own_scheduling_group() -> None:
    # As bgcluster starts every service: a session of its own, so a group of its own.
    assert _probe(7, new_session=True) == ["True", "7", "7"]


@needs_autogroup
def test_a_process_in_a_shared_session_leaves_the_group_alone() -> None:
    # The test runner's group holds other processes: only the process's own nice moves.
    before = Path("/proc/self/autogroup").read_text().split()[-1]
    assert _probe(7, new_session=False) == ["False", "7", before]


@needs_autogroup
@pytest.mark.skipif(os.geteuid() != 0, reason="raising a priority needs CAP_SYS_NICE")
def test_a_privileged_session_leader_raises_its_group() -> None:
    # The table replicas' default (-5): their clocks fire first on a shared box.
    assert _probe(-5, new_session=True) == ["True", "-5", "-5"]


def test_the_current_niceness_changes_nothing() -> None:
    assert priority.apply(os.getpriority(os.PRIO_PROCESS, 0)) is False
