"""Supervision of the cluster runner's children: whatever dies is started again, with backoff.

A child that dies (a crash, a kill -9, `bgcluster restart NAME`) is reported with its last lines
and started again with the same command line, ports and data, after a delay that doubles from
0.5 s up to 30 s while it keeps dying young, and drops back once it has lived a minute. Restart
counts and the current pid are what `bgcluster status` shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from infra.cluster.processes import ManagedProcess

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 30.0
HEALTHY_AFTER_S = 60.0


@dataclass
class Supervised:
    process: ManagedProcess
    restarts: int = 0
    delay_s: float = FIRST_DELAY_S
    started_at: float = field(default_factory=time.monotonic)
    last_exit: int | None = None


class Supervisor:
    """Watches children; `on_death(process, code)` is told before each restart, `on_restart`
    after it."""

    def __init__(
        self,
        on_death: Callable[[ManagedProcess, int], None],
        on_restart: Callable[[ManagedProcess], None],
    ) -> None:
        self.on_death = on_death
        self.on_restart = on_restart
        self.children: dict[str, Supervised] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()

    def watch(self, process: ManagedProcess) -> None:
        entry = Supervised(process)
        self.children[process.name] = entry
        self._tasks.append(asyncio.create_task(self._keep(entry), name=f"keep-{process.name}"))

    def restarts(self, name: str) -> int:
        entry = self.children.get(name)
        return entry.restarts if entry else 0

    async def _keep(self, entry: Supervised) -> None:
        process = entry.process
        while True:
            code = await process.wait()
            if self._stopping.is_set():
                return
            entry.last_exit = code
            self.on_death(process, code)
            lived = time.monotonic() - entry.started_at
            entry.delay_s = FIRST_DELAY_S if lived > HEALTHY_AFTER_S else entry.delay_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), entry.delay_s)
            if self._stopping.is_set():
                return
            entry.delay_s = min(MAX_DELAY_S, entry.delay_s * 2)
            try:
                await process.start()
            except OSError as exc:  # e.g. the binary vanished: keep trying, loudly
                process.out.write(f"{process.name} could not be started again: {exc}\n")
                entry.started_at = time.monotonic()
                continue
            entry.restarts += 1
            entry.started_at = time.monotonic()
            self.on_restart(process)

    async def stop(self) -> None:
        """Stop restarting (call before stopping the children)."""
        self._stopping.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
