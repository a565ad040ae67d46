"""Lower a batch process's CPU priority so latency-bound services on the same box go first.

`os.nice` alone is not enough on Linux with autogroup scheduling (the kernel default on desktops
and Debian): every session is its own scheduling group, groups share the CPU equally whatever
their members' nice values, and `bgcluster up` starts each service in a session of its own. A
niced analysis service then still took an equal share beside each table replica (measured: 0.4
core of 2 in the soak). A session leader's autogroup is its own, so its nice is set as well.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("bg.priority")
AUTOGROUP = Path("/proc/self/autogroup")


def lower(nice: int) -> bool:
    """Add `nice` to this thread's niceness (threads made later inherit it) and, when this
    process leads its own session, set its autogroup's nice to it. True if the autogroup's was
    set."""
    if nice <= 0:
        return False
    os.nice(nice)
    if os.getsid(0) != os.getpid() or not AUTOGROUP.exists():
        return False  # a shared session's group holds other processes too: leave it
    try:
        AUTOGROUP.write_text(str(nice))
    except OSError as exc:  # no autogroup support, or a read-only /proc: the thread's nice stands
        log.info("autogroup nice not set", extra={"error": repr(exc)})
        return False
    return True
