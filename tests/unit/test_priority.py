"""services/common/priority.py: a batch process's nice reaches its scheduling group, not only its
thread (autogroup scheduling ignores a member's nice between groups)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from services.common import priority

PROBE = (
    "import os; from services.common import priority; "
    "print(priority.lower(7), os.nice(0), open('/proc/self/autogroup').read().split()[-1])"
)
needs_autogroup = pytest.mark.skipif(
    not Path("/proc/self/autogroup").exists(), reason="kernel without autogroup scheduling"
)


def _probe(new_session: bool) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=new_session,
    )
    return done.stdout.split()


@needs_autogroup
def test_a_session_leader_lowers_its_own_scheduling_group() -> None:
    # As bgcluster starts every service: a session of its own, so a group of its own.
    assert _probe(new_session=True) == ["True", "7", "7"]


@needs_autogroup
def test_a_process_in_a_shared_session_leaves_the_group_alone() -> None:
    # The test runner's group holds other processes: only the thread's nice moves.
    before = Path("/proc/self/autogroup").read_text().split()[-1]
    set_group, nice, group = _probe(new_session=False)
    assert (set_group, nice, group) == ("False", "7", before)


def test_zero_changes_nothing() -> None:
    assert priority.lower(0) is False
