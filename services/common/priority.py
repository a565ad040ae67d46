"""A service's CPU priority on a shared box (BG_NICE): the clock keepers first, batch work last.

`os.nice` alone is not enough on Linux with autogroup scheduling (the kernel default on desktops
and Debian): every session is its own scheduling group, groups share the CPU equally whatever
their members' nice values, and `bgcluster up` starts each service in a session of its own. A
niced analysis service then still took an equal share beside each table replica. A session
leader's autogroup is its own, so its nice is set as well.

Measured (benchmarks/soak.py, 1,000 tables, 2 cores shared by ~25 processes): the table
replicas' event-loop stalls over 20 ms were all "waiting" (no core), and their deadlines' p99 per
steady 10 s window 17-217 ms at nice 0, 20-57 ms (one window apart) at -5.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("bg.priority")
AUTOGROUP = Path("/proc/self/autogroup")


def apply(nice: int) -> bool:
    """Set this process's niceness to `nice` (threads made later inherit it) and, when it leads
    its own session, its autogroup's. A higher priority (below the current) needs CAP_SYS_NICE:
    without it the process keeps its own and says so. True if the autogroup's was set."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if nice == current:
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except PermissionError:
        log.info("priority unchanged: raising it needs CAP_SYS_NICE", extra={"nice": nice})
        return False
    if os.getsid(0) != os.getpid() or not AUTOGROUP.exists():
        return False  # a shared session's group holds other processes too: leave it
    try:
        AUTOGROUP.write_text(str(nice))
    except OSError as exc:  # no autogroup support, or a read-only /proc: the thread's nice stands
        log.info("autogroup nice not set", extra={"error": repr(exc)})
        return False
    return True
